// dst[id - id_first] += the source rows of id, for the ids of this dispatch:
// the host has grouped the source rows by destination row (a schedule of
// three parts: offsets [U + 1], ids [U] ascending, source rows [R] in
// ascending order within each id). Thread (u, c) owns dst element (id_u, c)
// and adds its rows in ascending order, the order of the CPU loop (and of
// scatter_add.wgsl), so the sums are the same to the bit; each thread reads
// only its own rows where scatter_add.wgsl scans every id.
struct Params {
  u_first: u32,   // the first group of this dispatch
  u_count: u32,   // groups in this dispatch
  cols: u32,      // C
  id_first: u32,  // global index of the first dst row in this binding
  ids_at: u32,    // where the ids start in `schedule` (U + 1)
  rows_at: u32,   // where the source rows start (2U + 1)
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> schedule: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;        // [R, C]
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;  // [rows, C]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.u_count * p.cols) {
    return;
  }
  let u = p.u_first + i / p.cols;
  let c = i % p.cols;
  let at = (schedule[p.ids_at + u] - p.id_first) * p.cols + c;
  var acc = dst[at];
  for (var j = schedule[u]; j < schedule[u + 1u]; j++) {
    acc = acc + src[schedule[p.rows_at + j] * p.cols + c];
  }
  dst[at] = acc;
}
