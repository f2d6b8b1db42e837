// Shared snippet (no entry point) of the row-norm kernels (layernorm,
// rms_norm, their backwards and the fused residual form): their parameter
// block (LayerNormParams in webgpu/nn_norm.cpp, RowParams in
// webgpu/llama_norm.cpp) and the row statistics they share, which read the
// kernel's `x` binding. Preceded by row_reduce.wgsl or row_subgroup.wgsl
// (the row layout: a workgroup or a subgroup to a row).
struct Params {
  rows: u32,
  cols: u32,
  eps: f32,
  _pad0: u32,
}

// The invocation's row (clamped to the last: `live` says whether it is one
// past it, which stores nothing), the offset of its first value, and the
// invocation's first column (each takes every ROW_STRIDE-th).
struct RowAt {
  live: bool,
  base: u32,
  lane: u32,
}
fn row_at(wg: vec3u, nwg: vec3u, lid: u32) -> RowAt {
  let row = row_of(wg, nwg, lid);
  return RowAt(row < p.rows, min(row, p.rows - 1u) * p.cols, row_lane(lid));
}

// (mean, 1 / sqrt(variance + eps)) of x[base .. base + cols): biased
// variance, in two passes over the row.
fn mean_rstd(base: u32, lid: u32) -> vec2f {
  let n = f32(p.cols);
  var sum = 0.0;
  for (var j = row_lane(lid); j < p.cols; j += ROW_STRIDE) {
    sum += x[base + j];
  }
  let mean = row_sum(sum, lid) / n;
  var sq = 0.0;
  for (var j = row_lane(lid); j < p.cols; j += ROW_STRIDE) {
    let d = x[base + j] - mean;
    sq += d * d;
  }
  return vec2f(mean, inverseSqrt(row_sum(sq, lid) / n + p.eps));
}

// 1 / sqrt(mean(x^2) + eps) over x[base .. base + cols).
fn rms_rstd(base: u32, lid: u32) -> f32 {
  var sq = 0.0;
  for (var j = row_lane(lid); j < p.cols; j += ROW_STRIDE) {
    let v = x[base + j];
    sq += v * v;
  }
  return inverseSqrt(row_sum(sq, lid) / f32(p.cols) + p.eps);
}
