// The decode path of the CPU quantized matmul (few rows of x) on AVX-512
// VNNI: integer dot products of the packed weights against x quantized to
// 24-bit integers (quant_decode_vnni.cpp).
#pragma once
#include <cstdint>

#include "ops/quant_plan.h"

namespace forge::cpu {

// x [m, in] @ W^T (+ bias) -> y [m, out], W MLX affine-quantized.
struct QmmArgs {
  const float* x;
  const uint32_t* w;
  const unsigned char *scales, *biases;  // the tensors' bytes
  const float* bias;                     // or null
  const QuantPlan* p;
  int64_t m;
  float* y;
};

// y = x @ W^T (+ bias) for small m, rows of W spread over the cores; false
// (nothing done) where the CPU lacks AVX-512 VNNI.
bool quantized_matvec_vnni(const QmmArgs& a);

}  // namespace forge::cpu
