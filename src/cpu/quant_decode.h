// The decode path of the CPU quantized matmul (few rows of x): integer dot
// products of the packed weights against x quantized to 24-bit integers.
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

// y = x @ W^T (+ bias) for small m, rows of W spread over the cores.
void quantized_matvec(const QmmArgs& a);

}  // namespace forge::cpu
