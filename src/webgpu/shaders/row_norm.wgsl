// Shared snippet (no entry point) of the row-norm kernels (layernorm,
// rms_norm, their backwards and the fused residual form): their parameter
// block (LayerNormParams in webgpu/nn_norm.cpp, RowParams in
// webgpu/llama_norm.cpp), one workgroup of WG invocations per row, and the
// workgroup sums and row statistics they share. The statistics read the
// kernel's `x` binding.
struct Params {
  rows: u32,
  cols: u32,
  eps: f32,
  _pad0: u32,
}

const WG: u32 = 256u;
var<workgroup> red: array<vec2f, WG>;

// The row this workgroup normalises (grids are 2D past the per-dim limit).
fn row_index(wg: vec3u, nwg: vec3u) -> u32 {
  return wg.y * nwg.x + wg.x;
}

// Both sums of v over the workgroup, returned to every invocation.
fn workgroup_sum2(v: vec2f, lid: u32) -> vec2f {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      red[lid] += red[lid + s];
    }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

fn workgroup_sum(v: f32, lid: u32) -> f32 {
  return workgroup_sum2(vec2f(v, 0.0), lid).x;
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
