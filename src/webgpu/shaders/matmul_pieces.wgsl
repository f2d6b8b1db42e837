// Entry point of the tiled matmul (appended to matmul_vec4.wgsl; batch 1, no
// triangles) for a grid whose last wave would run part empty: the GPU holds
// G tiles at once, and a grid of G w + rem tiles takes w + 1 waves' time
// when rem is much less than G (SmolLM2-360M's gate/up product at a
// 1024-token prefill: 320 tiles of 128 x 128 on the H200's 264 places). The
// first tiles, up to p.split_from (whole waves), are summed whole as in
// main; each of the rest is summed in p.pieces k-ranges by workgroups of
// their own, so that the last wave is of short pieces, and
// matmul_pieces_fixup.wgsl adds each tile's pieces in order. One workgroup
// does one tile or one piece: the tiles' sums keep every register they have
// in main (a loop over several pieces a workgroup, as stream-K does it, left
// room for one workgroup a core instead of two).
@group(0) @binding(6) var<storage, read_write> part: array<vec4<f32>>;  // [pieces][WGD T][BN4] a split tile

@compute @workgroup_size(WGD, WGD)
fn main_pieces(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_id) lid: vec3u) {
  let index = wg.y * nwg.x + wg.x;
  let tiles_n = (p.n + WGD * TN - 1u) / (WGD * TN);
  let ipt = (p.k + BK - 1u) / BK;  // k-slices a tile
  let tiles = tiles_n * ((p.m + WGD * T - 1u) / (WGD * T));
  if (index >= p.split_from + (tiles - p.split_from) * p.pieces) {
    return;  // past the grid (a 2-D grid rounds up)
  }
  var tile = index;
  var s0 = 0u;
  var s1 = ipt;
  if (index >= p.split_from) {
    let i = index - p.split_from;
    let j = i % p.pieces;
    tile = p.split_from + i / p.pieces;
    s0 = j * ipt / p.pieces;
    s1 = (j + 1u) * ipt / p.pieces;
  } else if (index < p.split_from / tiles_n * tiles_n) {
    // The whole rows of whole tiles in main's order (by groups of rows where
    // GROUP_ROWS asks): the same tiles, so the split ones stay the last.
    let t = tile_of(vec2u(index % tiles_n, index / tiles_n), vec2u(tiles_n, p.split_from / tiles_n));
    tile = t.y * tiles_n + t.x;
  }
  let row0 = (tile / tiles_n) * WGD * T;
  let col0 = (tile % tiles_n) * WGD * TN;
  var acc: array<vec4<f32>, 16>;
  tile_sums(0u, row0, col0, s0 * BK, min(s1 * BK, p.k), lid.y * WGD + lid.x, lid, &acc);
  if (index < p.split_from) {
    store_tile(0u, row0, col0, lid, &acc);
    return;
  }
  // Piece (index - split_from) of the split tiles, times alpha, as rows of BN4 vec4s.
  let base = (index - p.split_from) * WGD * T * BN4;
  for (var i = 0u; i < TM4; i++) {
    for (var r = 0u; r < 4u; r++) {
      let row = 4u * (lid.y + WGD * i) + r;
      for (var j = 0u; j < TN4; j++) {
        part[base + row * BN4 + lid.x + WGD * j] = p.alpha * acc[(4u * i + r) * MAX_T4 + j];
      }
    }
  }
}
