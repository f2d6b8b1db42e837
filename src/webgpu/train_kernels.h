// WebGPU host side of the training utilities (forge/ops/train.h). Inputs are
// validated by the op layer (src/ops/train_ops.cpp) before these run; all
// elementwise over dst's elements, split under the binding limit.
#pragma once
#include "forge/ops/train.h"

namespace forge::webgpu {

// dst += alpha * src (sgd_update: alpha = -lr; gradient_accumulate: 1).
void axpy_inplace(Tensor& dst, const Tensor& src, float alpha);
// dst *= alpha.
void scale_inplace(Tensor& dst, float alpha);
// dst *= min(1, max_norm / (sqrt(norm_sq[0]) + 1e-6)), in f32.
void clip_inplace(Tensor& dst, const Tensor& norm_sq, float max_norm);
// out = 0.5 (pred - target)^2.
void mse(const Tensor& pred, const Tensor& target, Tensor& out);

}  // namespace forge::webgpu
