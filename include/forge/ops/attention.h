// Attention ops: fused scaled-dot-product attention (flash attention) and its
// backward (see forge/ops.h for the conventions every op follows). All
// tensors are f32 and on one device.
//
// Visibility. Query i of a call sits at position pos(i) = kv_offset + i (the
// keys hold kv_offset earlier positions of a KV cache first). Key j takes part
// in query i's softmax when
//   - causal is off, or j <= pos(i);
//   - window is 0, or pos(i) - j < window (a sliding window of `window`
//     positions ending at the query; without causal, later keys stay visible);
//   - its score scale * q.k + mask is above -1e30 (a mask entry of -inf, or
//     any value at or below -1e30, removes the key).
// A query that sees no key has an output of exact zeros (and lse -inf); its
// gradients are zero. No NaNs arise from fully masked rows.
//
// Dropout. With dropout_p > 0 each probability P[b, h, i, j] is kept and
// scaled by 1 / (1 - p) exactly as forge::dropout would do on the
// probability tensor [batch, heads, seq_q, seq_k] with the same p and seed
// (flat index ((b * heads + h) * seq_q + i) * seq_k + j, Philox4x32-10): the
// mask is a pure function of (p, seed, shapes) on every backend, and the
// backward regenerates it from the seed.
#pragma once
#include <cstdint>

#include "forge/tensor.h"

namespace forge {

struct AttentionOptions {
  bool causal = false;
  int64_t kv_offset = 0;   // position of query 0 (a KV cache holding this many earlier keys)
  int64_t window = 0;      // sliding window in positions; 0 = unlimited
  float dropout_p = 0.0f;  // attention-probability dropout in [0, 1); 0 disables
  uint64_t dropout_seed = 0;
  float scale = 0.0f;      // softmax scale; 0 = 1 / sqrt(head_dim)
};

// One head: q [seq_q, head_dim], k, v [seq_k, head_dim] -> out [seq_q, head_dim].
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal);

// Multi-head (grouped-query) attention.
//   q    [batch, seq_q, num_heads, head_dim]
//   k, v [batch, seq_k, num_kv_heads, head_dim], num_heads a multiple of
//        num_kv_heads: query head h reads KV head h / (num_heads / num_kv_heads)
//        (MQA when num_kv_heads = 1)
//   mask optional additive [batch | 1, num_heads | 1, seq_q | 1, seq_k | 1]
//        (size-1 dims broadcast)
// -> out [batch, seq_q, num_heads, head_dim]. On WebGPU head_dim <= 128.
Tensor flash_attention_v2(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options = {},
                          const Tensor* mask = nullptr);

struct AttentionForward {
  Tensor out;  // [batch, seq_q, num_heads, head_dim]
  // [batch, num_heads, seq_q]: log-sum-exp of each query's visible scaled
  // scores (before dropout); -inf when none is visible.
  Tensor lse;
};
// flash_attention_v2 that also returns the log-sum-exp the backward uses.
AttentionForward flash_attention_v2_lse(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const AttentionOptions& options = {}, const Tensor* mask = nullptr);

struct AttentionGrads {
  Tensor grad_q;  // [batch, seq_q, num_heads, head_dim]
  Tensor grad_k;  // [batch, seq_k, num_kv_heads, head_dim], summed over the query heads sharing each KV head
  Tensor grad_v;  // [batch, seq_k, num_kv_heads, head_dim], likewise
};
// Backward of flash_attention_v2 from its inputs, its output `out` and the
// output gradient grad_out [batch, seq_q, num_heads, head_dim], with the
// forward's options and mask (no gradient flows to the mask). `lse` is the
// forward's log-sum-exp (flash_attention_v2_lse); when null it is recomputed
// (one extra forward).
AttentionGrads flash_attention_v2_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                           const Tensor& grad_out, const AttentionOptions& options = {},
                                           const Tensor* mask = nullptr, const Tensor* lse = nullptr);

// Self-attention over the columns of one joined projection:
//   qkv [batch, seq, (num_heads + 2 num_kv_heads) * head_dim], each token's
//       row q's heads, then k's, then v's (a fused q/k/v linear's output)
// -> as flash_attention_v2_lse(q, k, v) on those column blocks, out [batch,
// seq, num_heads, head_dim]. Where the device's kernels read q, k and v in
// place (WebGPU's prefill and training kernels, with k's and v's columns at
// byte offsets the device can bind), no copies are made; elsewhere qkv is
// split first. The results are the same either way.
AttentionForward flash_attention_v2_packed_lse(const Tensor& qkv, int64_t num_heads, int64_t num_kv_heads,
                                               const AttentionOptions& options = {}, const Tensor* mask = nullptr);
// Its backward: the gradient of qkv [batch, seq, (num_heads + 2
// num_kv_heads) * head_dim], q's, k's and v's gradients in qkv's column
// blocks. out, grad_out and lse as for flash_attention_v2_backward.
Tensor flash_attention_v2_packed_backward(const Tensor& qkv, int64_t num_heads, int64_t num_kv_heads,
                                          const Tensor& out, const Tensor& grad_out,
                                          const AttentionOptions& options = {}, const Tensor* mask = nullptr,
                                          const Tensor* lse = nullptr);

}  // namespace forge
