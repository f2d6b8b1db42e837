// quantize_affine: MLX's affine group quantization of one matrix.
#include <algorithm>
#include <cmath>

#include "forge/error.h"
#include "forge/quantize.h"

namespace forge {

QuantizedMatrix quantize_affine(std::span<const float> w, int64_t out, int64_t in, const QuantSpec& spec) {
  const int bits = spec.bits, group = spec.group_size;
  if (bits != 2 && bits != 4 && bits != 8) throw ValueError("[quantize] bits must be 2, 4 or 8, got " + std::to_string(bits));
  if (group != 32 && group != 64 && group != 128)
    throw ValueError("[quantize] group_size must be 32, 64 or 128, got " + std::to_string(group));
  if (in % group != 0)
    throw ValueError("[quantize] " + std::to_string(in) + " inputs are not a multiple of group_size " +
                     std::to_string(group));
  if (int64_t(w.size()) != out * in)
    throw ShapeError("[quantize] " + std::to_string(w.size()) + " values for [" + std::to_string(out) + ", " +
                     std::to_string(in) + "]");
  const int per = 32 / bits;
  const double n_bins = double((1 << bits) - 1);
  const int64_t groups = in / group, words = in / per;
  QuantizedMatrix q;
  q.words.assign(size_t(out * words), 0u);
  q.scales.resize(size_t(out * groups));
  q.biases.resize(size_t(out * groups));
  // In double, as the reference quantizer: the ids then match it exactly.
  for (int64_t o = 0; o < out; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      const float* x = w.data() + o * in + g * group;
      const auto [lo, hi] = std::minmax_element(x, x + group);
      const double w_min = *lo, w_max = *hi;
      // The edge of larger magnitude is the bias, and the scale's sign makes
      // every q non-negative; the scale is then nudged so the edge is exact.
      const bool min_edge = std::fabs(w_min) > std::fabs(w_max);
      double scale = std::max((w_max - w_min) / n_bins, 1e-7);
      if (!min_edge) scale = -scale;
      const double edge = min_edge ? w_min : w_max;
      const double q0 = std::nearbyint(edge / scale);
      double bias = edge;
      if (q0 != 0) scale = edge / q0;
      else bias = 0;
      q.scales[size_t(o * groups + g)] = float(scale);
      q.biases[size_t(o * groups + g)] = float(bias);
      for (int64_t i = 0; i < group; ++i) {
        const double v = std::clamp(std::nearbyint((double(x[i]) - bias) / scale), 0.0, n_bins);
        const int64_t col = g * group + i;
        q.words[size_t(o * words + col / per)] |= uint32_t(v) << (bits * (col % per));
      }
    }
  return q;
}

}  // namespace forge
