// Shared snippet (no entry point): the norm of a product's input rows applied
// as the rows are read, so a decode step needs no separate norm dispatch
// (matvec.wgsl, matvec_vec4.wgsl, matvec_multi.wgsl). Each workgroup forms a
// row's statistics itself (k is a model's hidden size: a few thousand
// values, read from cache), then scales what it loads as the norm kernels
// round it. NORM = 1: RMSNorm, (x * r) * w with r = inverseSqrt(mean(x^2) +
// eps) (rms_norm.wgsl); NORM = 2: LayerNorm, ((x - mean) * r) * w + b with r
// from the biased variance, in two passes as row_norm.wgsl's mean_rstd
// (layernorm.wgsl); NORM = 0: values as read. The kernel binds the norm's
// weight [k] and defines norm_weight(i) and norm_bias(i) -> vec4f, their
// values 4i .. 4i + 3 (the bias zero where the norm has none). A workgroup
// of 256 sums the statistics with wg_sum (reduce_tree.wgsl or
// reduce_subgroup.wgsl: the kernels are ReducingKernels).
override NORM: u32 = 0u;
override NORM_EPS: f32 = 1e-5;

// The mean a row is centred on from the sum of its k values: 0 for RMSNorm.
fn norm_mean(sum: f32, k: u32) -> f32 {
  if (NORM == 2u) {
    return sum / f32(k);
  }
  return 0.0;
}

// A row's scale r from the sum of squares of its k centred values.
fn norm_scale(sum_sq: f32, k: u32) -> f32 {
  return inverseSqrt(sum_sq / f32(k) + NORM_EPS);
}

// Values 4i .. 4i + 3 of a row with statistics s = (mean, r), normed.
fn normed(v: vec4f, s: vec2f, i: u32) -> vec4f {
  if (NORM == 0u) {
    return v;
  }
  if (NORM == 2u) {
    return ((v - s.x) * s.y) * norm_weight(i) + norm_bias(i);
  }
  return (v * s.y) * norm_weight(i);
}
