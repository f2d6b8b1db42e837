// Layer norm gradient with respect to x, a workgroup (or a subgroup,
// row_subgroup.wgsl) to each row; also writes dy * xhat per element, whose
// column sums (done by shaders/reduce.wgsl) are dgamma. With xhat = (x - mean) * rstd and g = dy * gamma:
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), plus dx_add where ADD
// (a residual stream's gradient joining the norm's). Preceded by
// row_norm.wgsl.
override ADD: bool = false;
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;      // [rows, cols]
@group(0) @binding(2) var<storage, read> gamma: array<f32>;  // [cols]
@group(0) @binding(3) var<storage, read> dy: array<f32>;     // [rows, cols]
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;     // [rows, cols]
@group(0) @binding(5) var<storage, read_write> dy_xhat: array<f32>;  // [rows, cols]
@group(0) @binding(6) var<storage, read> dx_add: array<f32>;  // [rows, cols] (ADD), else unused

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let at = row_at(wg, nwg, lid);
  let base = at.base;
  // Rows past the last store nothing.
  let cols_out = select(0u, p.cols, at.live);
  let s = mean_rstd(base, lid);
  let mean = s.x;
  let rstd = s.y;

  var acc = vec2f(0.0);
  for (var j = at.lane; j < p.cols; j += ROW_STRIDE) {
    let xhat = (x[base + j] - mean) * rstd;
    let g = dy[base + j] * gamma[j];
    acc += vec2f(g, g * xhat);
  }
  let m = row_sum2(acc, lid) / f32(p.cols);

  for (var j = at.lane; j < cols_out; j += ROW_STRIDE) {
    let xhat = (x[base + j] - mean) * rstd;
    let d = dy[base + j];
    let v = rstd * (d * gamma[j] - m.x - xhat * m.y);
    if (ADD) {
      dx[base + j] = dx_add[base + j] + v;
    } else {
      dx[base + j] = v;
    }
    dy_xhat[base + j] = d * xhat;
  }
}
