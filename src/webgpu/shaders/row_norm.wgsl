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

// The loops over an invocation's columns (j, j + ROW_STRIDE, ...) take four
// an iteration, all four loaded before any is used, then the rest one at a
// time: one load in flight an invocation left a subgroup to a row waiting on
// memory. The sums add in the one-at-a-time order.

// x at columns j, j + ROW_STRIDE, j + 2 ROW_STRIDE, j + 3 ROW_STRIDE of the row at base.
fn x4(base: u32, j: u32) -> vec4f {
  return vec4f(x[base + j], x[base + j + ROW_STRIDE], x[base + j + 2u * ROW_STRIDE], x[base + j + 3u * ROW_STRIDE]);
}

// (mean, 1 / sqrt(variance + eps)) of x[base .. base + cols): biased
// variance, in two passes over the row.
fn mean_rstd(base: u32, lid: u32) -> vec2f {
  let n = f32(p.cols);
  var sum = 0.0;
  var j = row_lane(lid);
  for (; j + 3u * ROW_STRIDE < p.cols; j += 4u * ROW_STRIDE) {
    let v = x4(base, j);
    sum += v.x;
    sum += v.y;
    sum += v.z;
    sum += v.w;
  }
  for (; j < p.cols; j += ROW_STRIDE) {
    sum += x[base + j];
  }
  let mean = row_sum(sum, lid) / n;
  var sq = 0.0;
  j = row_lane(lid);
  for (; j + 3u * ROW_STRIDE < p.cols; j += 4u * ROW_STRIDE) {
    let d = x4(base, j) - mean;
    sq += d.x * d.x;
    sq += d.y * d.y;
    sq += d.z * d.z;
    sq += d.w * d.w;
  }
  for (; j < p.cols; j += ROW_STRIDE) {
    let d = x[base + j] - mean;
    sq += d * d;
  }
  return vec2f(mean, inverseSqrt(row_sum(sq, lid) / n + p.eps));
}

// 1 / sqrt(mean(x^2) + eps) over x[base .. base + cols).
fn rms_rstd(base: u32, lid: u32) -> f32 {
  var sq = 0.0;
  var j = row_lane(lid);
  for (; j + 3u * ROW_STRIDE < p.cols; j += 4u * ROW_STRIDE) {
    let v = x4(base, j);
    sq += v.x * v.x;
    sq += v.y * v.y;
    sq += v.z * v.z;
    sq += v.w * v.w;
  }
  for (; j < p.cols; j += ROW_STRIDE) {
    let v = x[base + j];
    sq += v * v;
  }
  return inverseSqrt(row_sum(sq, lid) / f32(p.cols) + p.eps);
}
