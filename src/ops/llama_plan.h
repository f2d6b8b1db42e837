// The resolved geometry of the Llama ops, computed once by the op layer
// (src/ops/llama_*.cpp) and shared by both backends.
#pragma once
#include <cstdint>

namespace forge {

struct RopePlan {
  int64_t tokens = 0;    // token rows of x (all leading dims but the hidden one)
  int64_t seq = 1;       // tokens per sequence: row t has position pos + t % seq
  int64_t hidden = 0;    // heads * head_dim
  int64_t head_dim = 0;  // even
  bool inverse = false;  // rope_backward: rotate by the negated angle
};

struct RowsPlan {
  int64_t rows = 0, cols = 0;  // x viewed as [rows, cols]
  float eps = 1e-5f;
};

struct Conv1dPlan {
  int64_t rows = 0;  // batch * dim
  int64_t dim = 0;   // channels: row r uses w[r % dim], b[r % dim]
  int64_t seq = 0;
};

// Orders f32 bit patterns as unsigned keys: larger key = larger value,
// -0 < +0, a NaN with the sign bit clear above +inf (top_k, both backends).
inline uint32_t top_k_key(uint32_t bits) { return bits ^ ((bits & 0x80000000u) ? 0xFFFFFFFFu : 0x80000000u); }

}  // namespace forge
