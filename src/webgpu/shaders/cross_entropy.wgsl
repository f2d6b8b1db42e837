// Cross-entropy and its gradient IN PLACE over the logits
// (cross_entropy_in_place), one workgroup per row. The first pass keeps
// each invocation's running maximum and its sum of exp(x - maximum), scaled
// down when the maximum grows; the workgroup joins them, and the second pass
// overwrites each logit with (exp(x - max) / sum - onehot(id)) * scale. The
// row is read twice and written once, where softmax then ce_bwd read it
// four times and wrote it twice. An id >= cols gives a row and a loss of NaN.
// Preceded by row_reduce.wgsl (WG, row_index, the workgroup reductions) and
// nan.wgsl (nan_f32).
struct Params {
  rows: u32,      // rows in this binding
  cols: u32,      // V
  row_base: u32,  // global index of the first row
  scale: f32,
  pitch: u32,     // elements from one row to the next: V, or more for padded rows (left as they are past V)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;     // [rows, pitch]: logits in, gradient out
@group(0) @binding(2) var<storage, read> ids: array<u32>;         // [R], all rows
@group(0) @binding(3) var<storage, read_write> loss: array<f32>;  // [R], all rows

const LOWEST: f32 = -3.402823466e38;

// (max, sum of exp(v - max)) with four more values joined.
fn joined4(ms: vec2f, v: vec4f) -> vec2f {
  let m = max(ms.x, max(max(v.x, v.y), max(v.z, v.w)));
  let e = exp(v - vec4f(m));
  return vec2f(m, ms.y * exp(ms.x - m) + ((e.x + e.y) + (e.z + e.w)));
}

fn joined1(ms: vec2f, v: f32) -> vec2f {
  let m = max(ms.x, v);
  return vec2f(m, ms.y * exp(ms.x - m) + exp(v - m));
}

// The gradient at column c of a row whose softmax there is `prob`.
fn gradient(prob: f32, c: u32, id: u32, bad: bool, nan: f32) -> f32 {
  var g = prob;
  if (c == id) {
    g -= 1.0;
  }
  return select(g * p.scale, nan, bad);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = row_index(wg, nwg);
  if (row >= p.rows) {
    return;
  }
  let base = row * p.pitch;
  let id = ids[p.row_base + row];
  // Read before the barriers below, so before any invocation overwrites it.
  let xt = x[base + min(id, p.cols - 1u)];

  // Four loads in flight an invocation, then the rest one by one.
  var ms = vec2f(LOWEST, 0.0);
  var j = lid;
  for (; j + 3u * WG < p.cols; j += 4u * WG) {
    ms = joined4(ms, vec4f(x[base + j], x[base + j + WG], x[base + j + 2u * WG], x[base + j + 3u * WG]));
  }
  let full = j - lid;  // this invocation's columns below `full` went in rounds of 4 WG
  for (; j < p.cols; j += WG) {
    ms = joined1(ms, x[base + j]);
  }
  let mx = workgroup_max(ms.x, lid);
  let sum = workgroup_sum(ms.y * exp(ms.x - mx), lid);
  let inv = 1.0 / sum;

  // Backwards from the end of the row, which the first pass read last: that
  // part is the likeliest still in the cache. Four loads in flight an
  // invocation here too.
  let bad = id >= p.cols;
  let nan = nan_f32(id & 0u);
  for (var c = full + lid; c < p.cols; c += WG) {
    x[base + c] = gradient(exp(x[base + c] - mx) * inv, c, id, bad, nan);
  }
  for (var r = full; r > 0u; r -= 4u * WG) {
    let c = r - 4u * WG + lid;
    let v = vec4f(x[base + c], x[base + c + WG], x[base + c + 2u * WG], x[base + c + 3u * WG]);
    let probs = exp(v - vec4f(mx)) * inv;
    for (var e = 0u; e < 4u; e++) {
      x[base + c + e * WG] = gradient(probs[e], c + e * WG, id, bad, nan);
    }
  }
  if (lid == 0u) {
    loss[p.row_base + row] = select(mx + log(sum) - xt, nan, bad);
  }
}
