// The validated form of a sample call, shared by the op layer and both kernels.
#pragma once
#include <cstdint>

namespace forge {

struct SamplePlan {
  int64_t rows = 0;     // B
  int64_t vocab = 0;    // V
  bool greedy = true;
  uint32_t top_k = 0;   // 0: off (also when >= V)
  float inv_temp = 1;   // f32(1 / temperature), rounded once on the host
  float top_p = 1;      // >= 1: off
  uint32_t k0 = 0, k1 = 0;  // Philox key: the seed's low and high words
  uint32_t step = 0;        // Philox counter word 0
  uint32_t index_bits = 0;  // bits of the largest index search value (V fits in them)
  float min_p = 0;          // 0: off
};

// The repeat penalty's validated form: logits [rows, vocab], recent [rows, window] u32.
struct PenaltyPlan {
  int64_t rows = 0, vocab = 0, window = 0;
  float up = 1;    // repeat_penalty: multiplies z < 0
  float down = 1;  // f32(1 / repeat_penalty): multiplies z > 0
};

// A logit of a recent id after the penalty (the same product on every backend).
inline float repeat_penalized(float z, const PenaltyPlan& p) { return z > 0 ? z * p.down : z < 0 ? z * p.up : z; }

// f32 -> u32 key with the same order as the values (-inf lowest, +inf
// highest); every NaN takes the largest key, so the argmax of a row finds it.
inline uint32_t sample_order_key(uint32_t bits) {
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}
// The key of +inf: a row whose largest key reaches it is not finite.
constexpr uint32_t kSampleKeyPosInf = 0xFF800000u;

}  // namespace forge
