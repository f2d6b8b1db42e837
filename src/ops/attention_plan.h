// The resolved parameters of the attention ops, computed once by the op layer
// (src/ops/attention.cpp) and shared by both backends so that they apply the
// same f32 scale factors and the same dropout threshold.
#pragma once
#include <cstdint>

namespace forge {

struct AttentionPlan {
  int64_t batch = 0, seq_q = 0, seq_k = 0;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;  // query head h reads KV head h / (heads / kv_heads)
  int64_t kv_offset = 0;  // position of query 0
  int64_t window = 0;     // 0 = unlimited
  bool causal = false;
  float scale = 1.0f;     // softmax scale applied to q.k
  // Dropout of the probabilities: kept when the Philox word >= threshold.
  bool dropout = false;
  uint32_t threshold = 0;
  float drop_scale = 1.0f;  // f32(1 / (1 - p))
  uint64_t seed = 0;
  // Additive mask: element (b, h, i, j) at b*mask_sb + h*mask_sh + i*mask_si
  // + j*mask_sj (a stride of 0 broadcasts a size-1 dim).
  bool has_mask = false;
  int64_t mask_sb = 0, mask_sh = 0, mask_si = 0, mask_sj = 0;
  // Elements between consecutive tokens of q and of k / v, and of their
  // gradients: 0 = dense (heads * head_dim, kv_heads * head_dim). Wider where
  // q, k and v are column blocks of one joined projection
  // (flash_attention_v2_packed_lse); only the kernels named by
  // webgpu::attention_*_strided take that, and out / grad_out stay dense.
  int64_t q_row = 0, kv_row = 0;
  int64_t q_stride() const { return q_row ? q_row : heads * head_dim; }
  int64_t kv_stride() const { return kv_row ? kv_row : kv_heads * head_dim; }

  int64_t group() const { return heads / kv_heads; }
  // Keys [key_lo(i), key_hi(i)) are visible to query i by position (before
  // the mask).
  int64_t key_lo(int64_t i) const {
    int64_t lo = window > 0 ? kv_offset + i - window + 1 : 0;
    return lo < 0 ? 0 : lo;
  }
  int64_t key_hi(int64_t i) const {
    int64_t hi = causal ? kv_offset + i + 1 : seq_k;
    return hi > seq_k ? seq_k : (hi < 0 ? 0 : hi);
  }
};

// Scores at or below this count as masked out (a -inf mask entry among them).
constexpr float kAttentionMaskedScore = -1e30f;

}  // namespace forge
