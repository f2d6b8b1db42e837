// Shared snippet of matmul_vec4.wgsl: A read as four scalars, for an A whose
// row stride or offset is not a multiple of 4 (the LM head's logit gradient,
// row stride the vocabulary). Adjacent threads still read adjacent elements;
// m and k may be any size.
@group(0) @binding(1) var<storage, read> A: array<f32>;

// Logical A[row, col .. col + 3] (stored [m, k]) or A[row .. row + 3, col]
// (TRANS_A, stored [k, m]); zero past k. Rows past m read the last one, as
// in matmul_a_vec4.wgsl: they feed only outputs that are not stored.
fn load_a(base: u32, row: u32, col: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  if (TRANS_A) {
    if (!K_WHOLE && col >= p.k) {
      return v;
    }
    let at = base + col * p.lda;
    for (var e = 0u; e < 4u; e++) {
      v[e] = A[at + min(row + e, p.m - 1u)];
    }
    return v;
  }
  let at = base + min(row, p.m - 1u) * p.lda + col;
  for (var e = 0u; e < 4u; e++) {
    if (K_WHOLE || col + e < p.k) {
      v[e] = A[at + e];
    }
  }
  return v;
}
