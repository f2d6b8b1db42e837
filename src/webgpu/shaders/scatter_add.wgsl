// dst[ids[r_base + r] - id_first] += src[r] over the dst rows [id_first,
// id_first + rows) held by this binding, for the n_ids source rows from
// r_base held by the src binding. Deterministic without atomics: thread (c, g)
// owns the dst elements (v, c) with v % groups == g and scans every id in
// order, so each element sums its contributions in the order r = 0, 1, ...
// exactly as the CPU loop does (source row blocks are dispatched in order).
// Ids outside the binding's rows are skipped. With SET (scatter_set_rows,
// ids distinct) the source row replaces the dst row instead.
struct Params {
  rows: u32,      // dst rows in this binding
  cols: u32,      // C
  id_first: u32,  // global index of the first dst row
  n_ids: u32,     // source rows in this binding
  groups: u32,    // row owners per column
  r_base: u32,    // global index of the first source row
  _pad1: u32,
  _pad2: u32,
}

override SET: u32 = 0u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;       // [R], all rows
@group(0) @binding(2) var<storage, read> src: array<f32>;       // [n_ids, C]
@group(0) @binding(3) var<storage, read_write> dst: array<f32>; // [rows, C]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.cols * p.groups) {
    return;
  }
  let c = i % p.cols;
  let g = i / p.cols;
  for (var r = 0u; r < p.n_ids; r++) {
    let slot = ids[p.r_base + r] - p.id_first;  // wraps to a huge value below id_first
    if (slot < p.rows && slot % p.groups == g) {
      let at = slot * p.cols + c;
      if (SET != 0u) {
        dst[at] = src[r * p.cols + c];
      } else {
        dst[at] = dst[at] + src[r * p.cols + c];
      }
    }
  }
}
