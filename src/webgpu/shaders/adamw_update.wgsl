// Shared snippet (no entry point): one AdamW update of element i in place,
// for adamw.wgsl and adamw_flat.wgsl, which declare `p` (with beta1,
// one_minus_beta1, beta2, one_minus_beta2, step_size, sqrt_bias_c2 and eps),
// `param`, `m` and `v`. g is the gradient as used (clipped or not), decay the
// factor 1 - lr * weight_decay (1 without decay). The f32 formula and its
// order match the CPU kernels (src/cpu/nn_train.cpp).
fn adamw_update(i: u32, g: f32, decay: f32) {
  let decayed = param[i] * decay;
  let mi = p.beta1 * m[i] + p.one_minus_beta1 * g;
  let vi = p.beta2 * v[i] + p.one_minus_beta2 * (g * g);
  let denom = sqrt(vi) / p.sqrt_bias_c2 + p.eps;
  param[i] = decayed - p.step_size * (mi / denom);
  m[i] = mi;
  v[i] = vi;
}
