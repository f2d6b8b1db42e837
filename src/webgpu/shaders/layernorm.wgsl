// Layer norm over the last dim: one workgroup per row of `cols` values.
// y = (x - mean) * inverseSqrt(var + eps) * gamma + beta, biased variance.
// Preceded by row_norm.wgsl.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;      // [rows, cols]
@group(0) @binding(2) var<storage, read> gamma: array<f32>;  // [cols]
@group(0) @binding(3) var<storage, read> beta: array<f32>;   // [cols]
@group(0) @binding(4) var<storage, read_write> y: array<f32>;  // [rows, cols]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = row_index(wg, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  let s = mean_rstd(base, lid);
  for (var j = lid; j < p.cols; j += WG) {
    y[base + j] = (x[base + j] - s.x) * s.y * gamma[j] + beta[j];
  }
}
