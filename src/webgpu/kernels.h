// WebGPU host side of the ops: parameter blocks, bindings and grids for the
// WGSL kernels in shaders/. Inputs are validated by the op layer (src/ops/).
#pragma once
#include "forge/ops/core.h"
#include "ops/matmul_plan.h"

namespace forge::webgpu {

void add(const Tensor& a, const Tensor& b, Tensor& out);
void scale(const Tensor& x, float alpha, Tensor& out);
void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out);
void softmax(const Tensor& x, const SoftmaxPlan& plan, Tensor& out);

}  // namespace forge::webgpu
