// WebGPU host side of the attention ops (forge/ops/attention.h): flash
// kernels in shaders/flash_*.wgsl. Inputs are validated by
// src/ops/attention.cpp; the shapes are as in cpu/attention_kernels.h.
#pragma once
#include <string>

#include "forge/tensor.h"
#include "gpu/runtime.h"
#include "ops/attention_plan.h"

namespace forge::webgpu {

// The largest head_dim the kernels hold in registers.
constexpr int64_t kAttentionMaxHeadDim = 128;

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                       const AttentionPlan& plan, Tensor& out, Tensor& lse);
// The forward kernel attention_forward runs for seq_q queries of head_dim
// on `rt`, for benchmark reports: "flash_fwd_tiled 64x32" (queries x keys
// per tile), "flash_fwd" or "flash_decode".
std::string attention_forward_kernel(int64_t seq_q, int64_t head_dim, const gpu::Runtime& rt);

// The kernel attention_backward runs for `plan` on `dev`, for benchmark
// reports: "flash_bwd_scores 64x64 + products" (the scores' gradients in
// tiles of queries x keys, then products), "flash_bwd_dkv_tiled 32x32"
// (keys per workgroup x queries per tile) or "flash_bwd_dkv".
std::string attention_backward_kernel(const AttentionPlan& plan, const Device& dev);

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                        const Tensor& grad_out, const Tensor& lse, const AttentionPlan& plan, Tensor& grad_q,
                        Tensor& grad_k, Tensor& grad_v);

}  // namespace forge::webgpu
