// MLX affine quantization on the host: what `forge quantize` writes and what
// quantized benchmark models are made of. A group of `group_size` inputs of
// row o gets a scale s and bias b with w ~= q * s + b, q in [0, 2^bits - 1],
// chosen as MLX does (mlx.core.quantize): the group's edge value of larger
// magnitude is represented exactly.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "forge/model_config.h"

namespace forge {

struct QuantizedMatrix {
  std::vector<uint32_t> words;   // [out, in * bits / 32], value j of a word in bits [bits j, bits (j + 1))
  std::vector<float> scales;     // [out, in / group_size]
  std::vector<float> biases;     // [out, in / group_size]
};

// w [out, in] row-major -> MLX affine layout. ValueError for an unsupported
// spec or `in` not a multiple of group_size.
QuantizedMatrix quantize_affine(std::span<const float> w, int64_t out, int64_t in, const QuantSpec& spec);

// Reads the model folder `src` (a GPT-2 or Llama-family model with dense
// weights), quantizes every Linear and the token embedding (and an untied
// lm_head) with `spec` (GPT-2's Conv1D weights, [in, out] in the file, become
// MLX's [out, in] rows), and writes an MLX-layout folder to `dst`: weights u32, scales and
// biases in the model's 16-bit dtype (bf16 for f32 models), norms unchanged,
// "quantization" in config.json, tokenizer and generation files copied. dst
// is written whole or not at all. Returns the bytes of the new weights file.
uint64_t quantize_model(const std::filesystem::path& src, const std::filesystem::path& dst, const QuantSpec& spec);

}  // namespace forge
