// Cross-entropy backward through softmax: dlogits[r, j] =
// (probs[r, j] - (j == ids[r])) * scale; a row of NaN for an id >= cols.
// One thread per element of this binding's row block.
// Preceded by nan.wgsl (nan_f32).
struct Params {
  rows: u32,      // rows in this binding
  cols: u32,      // V
  row_base: u32,  // global index of the first row
  scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> probs: array<f32>;     // [rows, V]
@group(0) @binding(2) var<storage, read> ids: array<u32>;       // [R], all rows
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // [rows, V]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.rows * p.cols) {
    return;
  }
  let r = i / p.cols;
  let j = i % p.cols;
  let id = ids[p.row_base + r];
  if (id >= p.cols) {
    out[i] = nan_f32(id & 0u);
    return;
  }
  var hot = 0.0;
  if (j == id) {
    hot = 1.0;
  }
  out[i] = (probs[i] - hot) * p.scale;
}
