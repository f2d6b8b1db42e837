// The second pass of matmul_pieces.wgsl, over its split tiles in bands of 16
// rows: a tile's pieces (p.splits of them, alpha applied) added in k order
// and stored with the epilogues of matmul_vec4.wgsl (bias, GELU, the
// residual). Preceded by gelu.wgsl, matmul_epilogue.wgsl and
// matmul_partials.wgsl; T and TN as the product's.
override T: u32 = 8u;
override TN: u32 = T;
override BN4: u32 = 4u * TN;

@group(0) @binding(1) var<storage, read> part: array<vec4<f32>>;  // [split tiles][pieces][16 T][BN4]

// One workgroup for each 16 rows of a split tile: grid = split tiles x T.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let index = wg.y * nwg.x + wg.x;
  let split = index / T;  // the split tile, from 0
  let band = index % T;   // its rows [16 band, 16 band + 16)
  let tiles_n = (p.n + 16u * TN - 1u) / (16u * TN);
  let tiles = tiles_n * ((p.m + 16u * T - 1u) / (16u * T));
  let tile = p.split_from + split;
  if (tile >= tiles) {
    return;
  }
  let slot_size = 16u * T * BN4;
  let row0 = (tile / tiles_n) * 16u * T;
  let col0 = (tile % tiles_n) * 16u * TN;
  for (var idx = 16u * BN4 * band + lid; idx < 16u * BN4 * (band + 1u); idx += 256u) {
    let row = row0 + idx / BN4;
    if (row >= p.m) {
      break;
    }
    var s = part[split * p.splits * slot_size + idx];
    for (var j = 1u; j < p.splits; j++) {
      s += part[(split * p.splits + j) * slot_size + idx];
    }
    let col = col0 + 4u * (idx % BN4);
    for (var e = 0u; e < 4u; e++) {
      if (col + e < p.n) {
        store_c(p.c_offset + row * p.ldc + col + e, epilogue(s[e], row, col + e));
      }
    }
  }
}
