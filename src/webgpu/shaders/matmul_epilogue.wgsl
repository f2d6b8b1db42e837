// Shared snippet of the tiled matmul's stores (matmul_vec4.wgsl, the
// split-K reduction matmul_split_k.wgsl, matmul_pieces_fixup.wgsl; after
// gelu.wgsl): an output of C [m, n] from its scaled sum, as the separate ops
// would round it, C = R + gelu(sum + bias) with each part where the kernel
// takes it (p.has_bias, GELU, RESIDUAL; R dense [m, n]).
fn epilogue(scaled: f32, row: u32, col: u32) -> f32 {
  var o = scaled;
  if (p.has_bias != 0u) {
    o += bias[col];
  }
  if (GELU) {
    o = gelu_tanh(o);
  }
  if (RESIDUAL) {
    o = R[row * p.n + col] + o;
  }
  return o;
}

// Writes output `i` of C: o, or C[i] + o where ACCUMULATE (C += the product,
// in gradient_accumulate's order).
fn store_c(i: u32, o: f32) {
  if (ACCUMULATE) {
    C[i] = C[i] + o;
  } else {
    C[i] = o;
  }
}
