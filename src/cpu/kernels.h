// CPU kernels: plain reference loops, with OpenBLAS for matmul when built
// with it. Inputs are validated by the op layer (src/ops/) before these run.
#pragma once
#include "forge/ops/core.h"
#include "ops/matmul_plan.h"

namespace forge::cpu {

void add(const Tensor& a, const Tensor& b, Tensor& out);
void scale(const Tensor& x, float alpha, Tensor& out);
// b f32, or bf16 (then matmul_bf16).
void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out);
// matmul with a bf16 b: dot products over its 16-bit rows for few rows,
// else a widened copy through the f32 path.
void matmul_bf16(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out);
// x bf16 [..] -> out f32 [..] (one shape).
void widen_bf16(const Tensor& x, Tensor& out);
void softmax(const Tensor& x, const SoftmaxPlan& plan, Tensor& out);
// y, dy, dx [plan.rows, plan.cols]; a causal plan's masked entries of dx are zero.
void softmax_bwd(const Tensor& y, const Tensor& dy, const SoftmaxPlan& plan, Tensor& dx);

// c [p.m, p.n] (row stride ldc) = p.alpha * op(a) @ op(b), or += with
// `accumulate`, on the calling thread; op and the row strides of a and b as
// p gives them (p's batch, offsets, triangles and heads are not read): one
// block of work that a kernel spreads over the cores itself.
void gemm_on_thread(const MatmulPlan& p, const float* a, const float* b, float* c, int64_t ldc, bool accumulate);

// c [m, n] (row stride ldc) = a [m, k] @ b [n, k]^T on the calling thread:
// one block of a product that another kernel spreads over the cores (the
// quantized matmul dequantizes W a block of rows at a time and multiplies it).
void gemm_nt_block(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int64_t ldc);

}  // namespace forge::cpu
