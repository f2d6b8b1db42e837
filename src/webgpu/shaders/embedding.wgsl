// Embedding gather from one table chunk: out[r] = table[ids[r] - id_first]
// (+ wpe[pos + r % seq]) for the rows whose id falls in this chunk's
// [id_first, id_first + id_count). One thread per output element; a dispatch
// per (output row block, table chunk), so every row is written once. The
// dispatch with `poison` set writes NaN rows for ids >= vocab (ids on the GPU
// are not range checked on the host). wpe and out may be bound from an
// aligned offset below the range used: wpe_shift and out_shift (added mod
// 2^32) turn indices into wpe and into this dispatch's rows into binding
// indices.
// Preceded by nan.wgsl (nan_f32).
struct Params {
  rows: u32,      // output rows in this binding
  cols: u32,      // C
  row_base: u32,  // global index of this binding's first output row
  seq: u32,       // T: row r is at position pos + r % seq
  pos: u32,
  id_first: u32,
  id_count: u32,
  vocab: u32,
  has_wpe: u32,
  poison: u32,
  wpe_shift: u32,
  out_shift: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;     // [B * T], all rows
@group(0) @binding(2) var<storage, read> table: array<f32>;   // [id_count, C]
@group(0) @binding(3) var<storage, read> wpe: array<f32>;     // rows of [P, C]
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [rows, C] from out_shift

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.rows * p.cols) {
    return;
  }
  let r = i / p.cols;
  let c = i % p.cols;
  let g = p.row_base + r;
  let id = ids[g];
  let slot = id - p.id_first;  // wraps to a huge value below id_first
  if (slot < p.id_count) {
    var v = table[slot * p.cols + c];
    if (p.has_wpe != 0u) {
      v += wpe[(p.pos + g % p.seq) * p.cols + c + p.wpe_shift];
    }
    out[i + p.out_shift] = v;
  } else if (p.poison != 0u && id >= p.vocab) {
    out[i + p.out_shift] = nan_f32(id & 0u);
  }
}
