// Shared snippet (no entry point) of the row-norm kernels (layernorm,
// rms_norm, their backwards and the fused residual form): their parameter
// block (LayerNormParams in webgpu/nn_norm.cpp, RowParams in
// webgpu/llama_norm.cpp) and the row statistics they share, which read the
// kernel's `x` binding. Preceded by row_reduce.wgsl.
struct Params {
  rows: u32,
  cols: u32,
  eps: f32,
  _pad0: u32,
}

// (mean, 1 / sqrt(variance + eps)) of x[base .. base + cols): biased
// variance, in two passes over the row.
fn mean_rstd(base: u32, lid: u32) -> vec2f {
  let n = f32(p.cols);
  var sum = 0.0;
  for (var j = lid; j < p.cols; j += WG) {
    sum += x[base + j];
  }
  let mean = workgroup_sum(sum, lid) / n;
  var sq = 0.0;
  for (var j = lid; j < p.cols; j += WG) {
    let d = x[base + j] - mean;
    sq += d * d;
  }
  return vec2f(mean, inverseSqrt(workgroup_sum(sq, lid) / n + p.eps));
}

// 1 / sqrt(mean(x^2) + eps) over x[base .. base + cols).
fn rms_rstd(base: u32, lid: u32) -> f32 {
  var sq = 0.0;
  for (var j = lid; j < p.cols; j += WG) {
    let v = x[base + j];
    sq += v * v;
  }
  return inverseSqrt(workgroup_sum(sq, lid) / f32(p.cols) + p.eps);
}
