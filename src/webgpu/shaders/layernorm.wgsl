// Layer norm over the last dim: a workgroup (or a subgroup, row_subgroup.wgsl)
// to each row of `cols` values.
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
  let at = row_at(wg, nwg, lid);
  let base = at.base;
  // Rows past the last store nothing.
  let cols_out = select(0u, p.cols, at.live);
  let s = mean_rstd(base, lid);
  // Four columns an iteration, loaded before any is stored (row_norm.wgsl).
  var j = at.lane;
  for (; j + 3u * ROW_STRIDE < cols_out; j += 4u * ROW_STRIDE) {
    let g = vec4f(gamma[j], gamma[j + ROW_STRIDE], gamma[j + 2u * ROW_STRIDE], gamma[j + 3u * ROW_STRIDE]);
    let b = vec4f(beta[j], beta[j + ROW_STRIDE], beta[j + 2u * ROW_STRIDE], beta[j + 3u * ROW_STRIDE]);
    let v = (x4(base, j) - s.x) * s.y * g + b;
    for (var c = 0u; c < 4u; c++) {
      y[base + j + c * ROW_STRIDE] = v[c];
    }
  }
  for (; j < cols_out; j += ROW_STRIDE) {
    y[base + j] = (x[base + j] - s.x) * s.y * gamma[j] + beta[j];
  }
}
