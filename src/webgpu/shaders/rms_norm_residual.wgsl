// RMS norm of a residual sum, fused: one workgroup per row of `cols` values
// forms h = x + r, writes it to `sum` (the next residual stream of a Llama
// block) and y = (h * inverseSqrt(mean(h^2) + eps)) * w, as rms_norm.wgsl.
// Preceded by row_norm.wgsl.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;        // [rows, cols]
@group(0) @binding(2) var<storage, read> w: array<f32>;        // [cols]
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // [rows, cols]
@group(0) @binding(4) var<storage, read> r: array<f32>;        // [rows, cols]
@group(0) @binding(5) var<storage, read_write> sum: array<f32>;  // [rows, cols]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = row_index(wg, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  var sq = 0.0;
  for (var j = lid; j < p.cols; j += WG) {
    let v = x[base + j] + r[base + j];
    sum[base + j] = v;
    sq += v * v;
  }
  let rstd = inverseSqrt(workgroup_sum(sq, lid) / f32(p.cols) + p.eps);
  for (var j = lid; j < p.cols; j += WG) {
    y[base + j] = (sum[base + j] * rstd) * w[j];
  }
}
