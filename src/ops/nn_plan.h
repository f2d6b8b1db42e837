// The resolved parameters of the nn ops that need more than a shape, computed
// once by the op layer (in double where it matters) and shared by both
// backends so that they apply the same f32 values.
#pragma once
#include <cstdint>
#include <string>

namespace forge {

// Activations with one input (forward) or two (x, dy: backward).
enum class Activation { Gelu, Relu, Silu };

struct DropoutPlan {
  uint32_t threshold = 0;  // element kept when its random word >= threshold
  float scale = 1.0f;      // f32(1 / (1 - p))
  uint64_t seed = 0;
};

struct AdamWPlan {
  float decay = 1.0f;         // 1 - lr * weight_decay
  float beta1 = 0.9f, one_minus_beta1 = 0.1f;
  float beta2 = 0.999f, one_minus_beta2 = 0.001f;
  float step_size = 0.0f;     // lr / (1 - beta1^step)
  float sqrt_bias_c2 = 1.0f;  // sqrt(1 - beta2^step)
  float eps = 1e-8f;
};

// The f32 scalars of an AdamW step, validated (ValueError prefixed "[op]"
// and followed by `what`, the operands) and computed in double.
AdamWPlan adamw_plan(const char* op, double lr, double beta1, double beta2, double eps, double weight_decay,
                     int64_t step, const std::string& what);

}  // namespace forge
