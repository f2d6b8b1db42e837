// CPU kernels of the attention ops (forge/ops/attention.h): the reference the
// WebGPU kernels are compared with. Softmax and sums in double; scores as
// double dot products, or through sgemm for the forward and backward of
// longer query runs (src/cpu/attention.cpp). Inputs are validated by
// src/ops/attention.cpp.
#pragma once
#include "forge/tensor.h"
#include "ops/attention_plan.h"

namespace forge::cpu {

// q [B, Sq, H, D], k, v [B, Sk, Hkv, D], mask per plan (or undefined)
// -> out [B, Sq, H, D], lse [B, H, Sq].
void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                       const AttentionPlan& plan, Tensor& out, Tensor& lse);
// Gradients from out and grad_out [B, Sq, H, D] and the forward's lse.
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                        const Tensor& grad_out, const Tensor& lse, const AttentionPlan& plan, Tensor& grad_q,
                        Tensor& grad_k, Tensor& grad_v);

}  // namespace forge::cpu
