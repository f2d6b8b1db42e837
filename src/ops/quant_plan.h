// The resolved layout of an MLX affine-quantized matrix W [out, in], computed
// by the op layer (src/ops/quant_ops.cpp) and shared by both backends.
#pragma once
#include <cstdint>

namespace forge {

// How scales and biases are stored (both alike).
enum class ScaleKind : uint32_t { F32 = 0, BF16 = 1, F16 = 2 };

struct QuantPlan {
  int bits = 8;          // 2, 4 or 8
  int group_size = 64;   // 32, 64 or 128
  int64_t out = 0, in = 0;
  int64_t words = 0;     // u32 words per row of W: in * bits / 32
  int64_t groups = 0;    // scale groups per row: in / group_size
  ScaleKind scale_kind = ScaleKind::F32;
  int64_t scale_bytes = 4;  // bytes per scale
};

}  // namespace forge
