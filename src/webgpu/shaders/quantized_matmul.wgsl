// x @ W^T for an MLX affine-quantized W [out, in] (the layout of
// affine_dequantize.wgsl: BITS-bit values, 32 / BITS to a word, a scale and
// bias per GROUP inputs stored as f32, bf16 or f16 per SCALE_KIND), W
// unpacked in registers: one workgroup per (output feature, tile of 4 rows of
// x), its 64 invocations striding over the words of the weight row, the
// partial sums reduced in workgroup memory.
override BITS: u32 = 8u;
override GROUP: u32 = 64u;
override SCALE_KIND: u32 = 0u;

struct Params {
  w_rows: u32,      // rows of W in this dispatch
  cols: u32,        // in
  words: u32,       // words per row of W
  groups: u32,      // scale groups per row of W
  x_rows: u32,      // rows of x in this dispatch
  out_stride: u32,  // elements per output row (out)
  out_first: u32,   // output column of the dispatch's first W row
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;       // [w_rows, words]
@group(0) @binding(2) var<storage, read> scales: array<u32>;  // [w_rows, groups] as f32 or 16-bit pairs
@group(0) @binding(3) var<storage, read> biases: array<u32>;  // like scales
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [x_rows, out_stride]
@group(0) @binding(5) var<storage, read> x: array<f32>;       // [x_rows, cols]

override PER: u32 = 32u / BITS;
override MASK: u32 = (1u << BITS) - 1u;

fn widen(word: u32, j: u32) -> f32 {
  if (SCALE_KIND == 0u) {
    return bitcast<f32>(word);
  }
  let shift = (j & 1u) * 16u;
  if (SCALE_KIND == 1u) {
    return bitcast<f32>(((word >> shift) & 0xFFFFu) << 16u);
  }
  return unpack2x16float(word)[j & 1u];
}

fn word_index(j: u32) -> u32 {
  if (SCALE_KIND == 0u) {
    return j;
  }
  return j / 2u;
}

fn scale_at(j: u32) -> f32 {
  return widen(scales[word_index(j)], j);
}

fn bias_at(j: u32) -> f32 {
  return widen(biases[word_index(j)], j);
}

const WG: u32 = 64u;
const TM: u32 = 4u;
var<workgroup> red: array<f32, 256>;  // [TM, WG]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let g = wg.y * nwg.x + wg.x;
  let o = g % p.w_rows;
  let m0 = (g / p.w_rows) * TM;
  if (m0 >= p.x_rows) {
    return;
  }
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  for (var wi = lid; wi < p.words; wi += WG) {
    let word = w[o * p.words + wi];
    let i0 = wi * PER;
    let grp = o * p.groups + i0 / GROUP;
    let s = scale_at(grp);
    let b = bias_at(grp);
    for (var j = 0u; j < PER; j++) {
      let prod = f32((word >> (BITS * j)) & MASK) * s;
      let wv = prod + b;
      for (var r = 0u; r < TM; r++) {
        if (m0 + r < p.x_rows) {
          acc[r] += wv * x[(m0 + r) * p.cols + i0 + j];
        }
      }
    }
  }
  for (var r = 0u; r < TM; r++) {
    red[r * WG + lid] = acc[r];
  }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var r = 0u; r < TM; r++) {
        red[r * WG + lid] += red[r * WG + lid + s];
      }
    }
    workgroupBarrier();
  }
  if (lid < TM && m0 + lid < p.x_rows) {
    out[(m0 + lid) * p.out_stride + p.out_first + o] = red[lid * WG];
  }
}
