// MLX affine-quantized weights W [out, in] -> dense f32, one invocation per
// element: BITS-bit values packed 32 / BITS to a u32 word (value j of a word
// in bits [BITS j, BITS (j + 1))), one scale and bias per GROUP inputs:
// W[o, i] = f32(q) * scale + bias. Scales and biases are f32 (SCALE_KIND 0)
// or 16-bit values read two to a word: bf16 (1, widened by a 16-bit shift) or
// f16 (2, unpack2x16float); both exact. quantized_matmul.wgsl reads the same
// layout.
override BITS: u32 = 8u;
override GROUP: u32 = 64u;
override SCALE_KIND: u32 = 0u;

struct Params {
  w_rows: u32,      // rows of W in this dispatch
  cols: u32,        // in
  words: u32,       // words per row of W
  groups: u32,      // scale groups per row of W
  x_rows: u32,      // unused here (quantized_matmul.wgsl): rows of x in this dispatch
  out_stride: u32,  // unused here (quantized_matmul.wgsl): elements per output row (out)
  out_first: u32,   // unused here (quantized_matmul.wgsl): output column of the dispatch's first W row
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;       // [w_rows, words]
@group(0) @binding(2) var<storage, read> scales: array<u32>;  // [w_rows, groups] as f32 or 16-bit pairs
@group(0) @binding(3) var<storage, read> biases: array<u32>;  // like scales
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [w_rows, cols]

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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.w_rows * p.cols) {
    return;
  }
  let o = i / p.cols;
  let c = i % p.cols;
  let q = (w[o * p.words + c / PER] >> (BITS * (c % PER))) & MASK;
  let g = o * p.groups + c / GROUP;
  let prod = f32(q) * scale_at(g);
  out[i] = prod + bias_at(g);
}
