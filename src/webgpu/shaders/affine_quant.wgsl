// Shared snippet (no entry point): the MLX affine-quantized weight layout
// read by affine_dequantize.wgsl and quantized_matmul.wgsl. W [out, in]
// holds BITS-bit values packed 32 / BITS to a u32 word (value j of a word in
// bits [BITS j, BITS (j + 1))), one scale and bias per GROUP inputs:
// W[o, i] = f32(q) * scale + bias. Scales and biases are f32 (SCALE_KIND 0)
// or 16-bit values read two to a word: bf16 (1, widened by a 16-bit shift) or
// f16 (2, unpack2x16float); both exact. Also the parameter block both kernels
// take (QuantParams in webgpu/quant.cpp); the scale and bias readers use the
// kernel's `scales` and `biases` bindings.
override BITS: u32 = 8u;
override GROUP: u32 = 64u;
override SCALE_KIND: u32 = 0u;

struct Params {
  w_rows: u32,      // rows of W in this dispatch
  cols: u32,        // in
  words: u32,       // words per row of W
  groups: u32,      // scale groups per row of W
  x_rows: u32,      // quantized_matmul: rows of x in this dispatch
  out_stride: u32,  // quantized_matmul: elements per output row (out)
  out_first: u32,   // quantized_matmul: output column of the dispatch's first W row
  has_bias: u32,    // quantized_matmul: 1 when the bias binding holds [out] values to add
}

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
