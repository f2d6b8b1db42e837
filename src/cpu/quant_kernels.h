// CPU kernels of the quantized-weight ops (forge/ops/quant.h). Inputs are
// validated by the op layer (src/ops/quant_ops.cpp) before these run.
#pragma once
#include <cstdint>

#include "forge/ops/quant.h"
#include "ops/quant_plan.h"

namespace forge::cpu {

// bytes u32 [n words] -> out f32 [4 n].
void dequantize_bytes(const Tensor& bytes, Tensor& out);
// -> out f32 [out, in].
void affine_dequantize(const Tensor& w, const Tensor& scales, const Tensor& biases, const QuantPlan& plan,
                       Tensor& out);
// x [m, in] -> y [m, out] (+ bias [out] when given).
void quantized_matmul(const Tensor& x, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const Tensor* bias, const QuantPlan& plan, int64_t m, Tensor& y);
// ids u32 or i32 [R] (in range on the CPU) -> out f32 [R, in]: rows of W.
void affine_embedding(const Tensor& ids, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const QuantPlan& plan, Tensor& out);

}  // namespace forge::cpu
