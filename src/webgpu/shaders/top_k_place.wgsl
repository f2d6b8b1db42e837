// top_k, pass 2: one invocation per winner of top_k_select.wgsl. A winner's
// place in the output is the number of winners of its row that precede it
// (a larger key, or an equal key and a lower index); out holds the indices.
struct Params {
  count: u32,  // rows * k in this dispatch
  k: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> cand: array<vec2u>;    // [rows, k]: (key, index)
@group(0) @binding(2) var<storage, read_write> out: array<u32>;  // [rows, k]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let row = i / p.k;
  let me = cand[i];
  var place = 0u;
  for (var o = row * p.k; o < (row + 1u) * p.k; o++) {
    let other = cand[o];
    if (other.x > me.x || (other.x == me.x && other.y < me.y)) {
      place++;
    }
  }
  out[row * p.k + place] = me.y;
}
