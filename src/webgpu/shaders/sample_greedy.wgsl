// Greedy next tokens over many workgroups (preceded by argmax.wgsl): one
// workgroup scanning a whole vocabulary walks it serially, about 200 loads a
// lane for 50,257 logits (46 us on the H200). `partial` gives each workgroup
// a CHUNK of a row (grid: chunks x rows) and writes its (key, first index);
// `finish` reduces a row's chunks (chunks are in index order, so the first
// index of the largest key is the same as a single scan's) into ids.
// `serial` is a CPU driver's (gpu::Runtime::cpu_driver): one invocation scans
// a whole row, with none of the workgroup's barrier rounds.
struct Params {
  rows: u32,
  vocab: u32,
  chunks: u32,     // ceil(vocab / CHUNK)
  row_base: u32,   // ids index of this dispatch's first row
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> z: array<f32>;             // [rows, vocab]
@group(0) @binding(2) var<storage, read_write> part: array<vec2u>;  // [rows, chunks]: (key, index)
@group(0) @binding(3) var<storage, read_write> ids: array<u32>;     // [all rows]

const CHUNK: u32 = 2u * SCAN * WG;

var<private> z_base: u32;

fn z_at(i: u32) -> f32 {
  return z[z_base + i];
}

@compute @workgroup_size(WG)
fn partial(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let chunk = wg.x;
  let row = wg.y;
  z_base = row * p.vocab;
  let lo = chunk * CHUNK;
  let lane = lane_first_max(lid, lo, min(lo + CHUNK, p.vocab));
  let best = argmax_key(lid, lane.x, lane.y);
  if (lid == 0u) {
    part[row * p.chunks + chunk] = best;
  }
}

@compute @workgroup_size(WG)
fn finish(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wg.x;
  var key = 0u;
  var index = 0xffffffffu;
  for (var c = lid; c < p.chunks; c += WG) {
    let e = part[row * p.chunks + c];
    if (index == 0xffffffffu || e.x > key) {
      key = e.x;
      index = e.y;
    }
  }
  let best = argmax_key(lid, key, index);
  if (lid == 0u) {
    ids[p.row_base + row] = select(best.y, NO_TOKEN, best.x >= KEY_POS_INF);
  }
}

// One invocation a row (grid: ceil(rows / 64)); part is not used.
@compute @workgroup_size(64)
fn serial(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.x;
  if (row >= p.rows) {
    return;
  }
  z_base = row * p.vocab;
  var key = 0u;
  var index = 0xffffffffu;
  for (var i = 0u; i < p.vocab; i++) {
    let k = order_key(z_at(i));
    if (index == 0xffffffffu || k > key) {
      key = k;
      index = i;
    }
  }
  ids[p.row_base + row] = select(index, NO_TOKEN, key >= KEY_POS_INF);
}
