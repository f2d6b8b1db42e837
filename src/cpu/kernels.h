// CPU kernels: plain reference loops, with OpenBLAS for matmul when built
// with it. Inputs are validated by the op layer (src/ops/) before these run.
#pragma once
#include "forge/ops/core.h"
#include "ops/matmul_plan.h"

namespace forge::cpu {

void add(const Tensor& a, const Tensor& b, Tensor& out);
void scale(const Tensor& x, float alpha, Tensor& out);
void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out);
void softmax(const Tensor& x, const SoftmaxPlan& plan, Tensor& out);

// c [m, n] (row stride ldc) = a [m, k] @ b [n, k]^T on the calling thread:
// one block of a product that another kernel spreads over the cores (the
// quantized matmul dequantizes W a block of rows at a time and multiplies it).
void gemm_nt_block(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int64_t ldc);

}  // namespace forge::cpu
