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

// Whether the kernels that attention_forward / attention_backward run for
// `plan` on `dev` read q, k and v (and write their gradients) at the token
// strides plan.q_row / kv_row: the tiled prefill kernel forward, and the
// scores' gradients in tiles with their products backward where each query
// head is its own KV head. Other kernels take them dense.
bool attention_forward_strided(const AttentionPlan& plan, const Device& dev);
bool attention_backward_strided(const AttentionPlan& plan, const Device& dev);

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                        const Tensor& grad_out, const Tensor& lse, const AttentionPlan& plan, Tensor& grad_q,
                        Tensor& grad_k, Tensor& grad_v);

}  // namespace forge::webgpu
