// RoPE frequencies with the scaling types forge implements (model_config.h
// refuses the others at load time).
#include <cmath>
#include <numbers>

#include "forge/ops.h"
#include "models/llama/llama.h"

namespace forge::models {

std::vector<float> llama_inv_freq(const LlamaConfig& c) {
  std::vector<float> f = rope_inv_freq(c.head_dim, c.rope_theta);
  if (!c.rope_scaling || c.rope_scaling->type == "default") return f;
  const RopeScaling& s = *c.rope_scaling;
  if (s.type == "linear") {
    for (float& x : f) x = float(x / s.factor);
    return f;
  }
  // llama3: long wavelengths are slowed by `factor`, short ones kept, and the
  // band between blended by where the wavelength falls.
  const double old_ctx = double(s.original_max_position_embeddings);
  const double low_wavelen = old_ctx / s.low_freq_factor, high_wavelen = old_ctx / s.high_freq_factor;
  for (float& x : f) {
    const double wavelen = 2 * std::numbers::pi / x;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      x = float(x / s.factor);
      continue;
    }
    const double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    x = float((1 - smooth) * x / s.factor + smooth * x);
  }
  return f;
}

}  // namespace forge::models
