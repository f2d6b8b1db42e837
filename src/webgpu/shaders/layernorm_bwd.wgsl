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

  // Four columns an iteration, loaded before any is used (row_norm.wgsl).
  var acc = vec2f(0.0);
  var j = at.lane;
  for (; j + 3u * ROW_STRIDE < p.cols; j += 4u * ROW_STRIDE) {
    let xhat = (x4(base, j) - mean) * rstd;
    let g = dy4(base, j) * gamma4(j);
    acc += vec2f(g.x, g.x * xhat.x);
    acc += vec2f(g.y, g.y * xhat.y);
    acc += vec2f(g.z, g.z * xhat.z);
    acc += vec2f(g.w, g.w * xhat.w);
  }
  for (; j < p.cols; j += ROW_STRIDE) {
    let xhat = (x[base + j] - mean) * rstd;
    let g = dy[base + j] * gamma[j];
    acc += vec2f(g, g * xhat);
  }
  let m = row_sum2(acc, lid) / f32(p.cols);

  j = at.lane;
  for (; j + 3u * ROW_STRIDE < cols_out; j += 4u * ROW_STRIDE) {
    let xhat = (x4(base, j) - mean) * rstd;
    let d = dy4(base, j);
    var v = rstd * (d * gamma4(j) - m.x - xhat * m.y);
    if (ADD) {
      v += vec4f(dx_add[base + j], dx_add[base + j + ROW_STRIDE], dx_add[base + j + 2u * ROW_STRIDE],
                 dx_add[base + j + 3u * ROW_STRIDE]);
    }
    let dxh = d * xhat;
    for (var c = 0u; c < 4u; c++) {
      dx[base + j + c * ROW_STRIDE] = v[c];
      dy_xhat[base + j + c * ROW_STRIDE] = dxh[c];
    }
  }
  for (; j < cols_out; j += ROW_STRIDE) {
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

fn dy4(base: u32, j: u32) -> vec4f {
  return vec4f(dy[base + j], dy[base + j + ROW_STRIDE], dy[base + j + 2u * ROW_STRIDE], dy[base + j + 3u * ROW_STRIDE]);
}

fn gamma4(j: u32) -> vec4f {
  return vec4f(gamma[j], gamma[j + ROW_STRIDE], gamma[j + 2u * ROW_STRIDE], gamma[j + 3u * ROW_STRIDE]);
}
