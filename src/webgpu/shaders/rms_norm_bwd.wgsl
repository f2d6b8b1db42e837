// Gradient of RMS norm: a workgroup (or a subgroup, row_subgroup.wgsl) to
// each row. With rstd = inverseSqrt(mean(x^2) + eps) and xhat = x rstd:
//   dx = rstd (dy w - xhat mean(dy w xhat)),  dy_xhat = dy xhat
// (dy_xhat is summed over rows on the host side into dweight), plus dx_add
// where ADD (a residual stream's gradient joining the norm's).
// Preceded by row_norm.wgsl.
override ADD: bool = false;
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;              // [rows, cols]
@group(0) @binding(2) var<storage, read> w: array<f32>;              // [cols]
@group(0) @binding(3) var<storage, read> dy: array<f32>;             // [rows, cols]
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;       // [rows, cols]
@group(0) @binding(5) var<storage, read_write> dy_xhat: array<f32>;  // [rows, cols]
@group(0) @binding(6) var<storage, read> dx_add: array<f32>;         // [rows, cols] (ADD), else unused

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let at = row_at(wg, nwg, lid);
  let base = at.base;
  // Rows past the last store nothing.
  let cols_out = select(0u, p.cols, at.live);
  let rstd = rms_rstd(base, lid);
  var dot = 0.0;
  for (var j = at.lane; j < p.cols; j += ROW_STRIDE) {
    dot += dy[base + j] * w[j] * (x[base + j] * rstd);
  }
  let mean_dot = row_sum(dot, lid) / f32(p.cols);
  for (var j = at.lane; j < cols_out; j += ROW_STRIDE) {
    let xhat = x[base + j] * rstd;
    let g = dy[base + j];
    let v = rstd * (g * w[j] - xhat * mean_dot);
    if (ADD) {
      dx[base + j] = dx_add[base + j] + v;
    } else {
      dx[base + j] = v;
    }
    dy_xhat[base + j] = g * xhat;
  }
}
