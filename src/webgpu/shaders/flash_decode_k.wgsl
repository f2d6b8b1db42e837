// Shared snippet (no entry point) of flash_decode.wgsl: the scaled query
// (qs, in workgroup memory) dotted with the key whose HEAD_DIM values start
// at k[kb]. This one reads k as scalars (any head size), four partial sums
// so that independent loads are in flight; flash_decode_k4.wgsl reads vec4s
// (head sizes a multiple of 4) and sums in the same order.
fn key_dot(kb: u32) -> f32 {
  var d0 = 0.0;
  var d1 = 0.0;
  var d2 = 0.0;
  var d3 = 0.0;
  var d = 0u;
  for (; d + 4u <= HEAD_DIM; d += 4u) {
    d0 += qs[d] * k[kb + d];
    d1 += qs[d + 1u] * k[kb + d + 1u];
    d2 += qs[d + 2u] * k[kb + d + 2u];
    d3 += qs[d + 3u] * k[kb + d + 3u];
  }
  for (; d < HEAD_DIM; d++) {
    d0 += qs[d] * k[kb + d];
  }
  return (d0 + d1) + (d2 + d3);
}
