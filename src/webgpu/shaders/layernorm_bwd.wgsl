// Layer norm gradient with respect to x, one workgroup per row; also writes
// dy * xhat per element, whose column sums (done by shaders/reduce.wgsl) are
// dgamma. With xhat = (x - mean) * rstd and g = dy * gamma:
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
struct Params {
  rows: u32,
  cols: u32,
  eps: f32,
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;      // [rows, cols]
@group(0) @binding(2) var<storage, read> gamma: array<f32>;  // [cols]
@group(0) @binding(3) var<storage, read> dy: array<f32>;     // [rows, cols]
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;     // [rows, cols]
@group(0) @binding(5) var<storage, read_write> dy_xhat: array<f32>;  // [rows, cols]

const WG: u32 = 256u;
var<workgroup> red: array<vec2f, WG>;

// The sums of v over the workgroup, returned to every invocation.
fn workgroup_sum(v: vec2f, lid: u32) -> vec2f {
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

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.y * nwg.x + wg.x;
  if (row >= p.rows) {
    return;
  }
  let base = row * p.cols;
  let n = f32(p.cols);

  var sum = 0.0;
  for (var j = lid; j < p.cols; j += WG) {
    sum += x[base + j];
  }
  let mean = workgroup_sum(vec2f(sum, 0.0), lid).x / n;
  var sq = 0.0;
  for (var j = lid; j < p.cols; j += WG) {
    let d = x[base + j] - mean;
    sq += d * d;
  }
  let rstd = inverseSqrt(workgroup_sum(vec2f(sq, 0.0), lid).x / n + p.eps);

  var acc = vec2f(0.0);
  for (var j = lid; j < p.cols; j += WG) {
    let xhat = (x[base + j] - mean) * rstd;
    let g = dy[base + j] * gamma[j];
    acc += vec2f(g, g * xhat);
  }
  let m = workgroup_sum(acc, lid) / n;

  for (var j = lid; j < p.cols; j += WG) {
    let xhat = (x[base + j] - mean) * rstd;
    let d = dy[base + j];
    dx[base + j] = rstd * (d * gamma[j] - m.x - xhat * m.y);
    dy_xhat[base + j] = d * xhat;
  }
}
