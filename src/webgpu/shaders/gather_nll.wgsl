// Per-row negative log-likelihood: out[row_base + r] = -log(probs[r, ids[row_base + r]]);
// NaN for an id >= cols. One thread per row of this binding's row block.
// Preceded by nan.wgsl (nan_f32).
struct Params {
  rows: u32,      // rows in this binding of probs
  cols: u32,      // V
  row_base: u32,  // global index of the first row
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> probs: array<f32>;     // [rows, V]
@group(0) @binding(2) var<storage, read> ids: array<u32>;       // [R], all rows
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // [R], all rows

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let r = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (r >= p.rows) {
    return;
  }
  let g = p.row_base + r;
  let id = ids[g];
  if (id >= p.cols) {
    out[g] = nan_f32(id & 0u);
    return;
  }
  out[g] = -log(probs[r * p.cols + id]);
}
