#include <algorithm>
#include <cmath>

#include "cpu/isa_clones.h"
#include "cpu/kernels.h"
#include "cpu/vec_math.h"

namespace forge::cpu {

FORGE_ISA_CLONES void softmax(const Tensor& x, const SoftmaxPlan& p, Tensor& out) {
  const float* px = x.data<float>();
  float* po = out.data<float>();
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = px + r * p.cols;
    float* yr = po + r * p.cols;
    // Keys [0, visible) take part; the rest are exact zeros.
    int64_t visible = p.cols;
    if (p.causal) visible = std::min<int64_t>(p.cols, r % p.q_len + p.key_offset + 1);
    float mx = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) mx = std::max(mx, xr[j]);
    // exp in double rounded once: the correctly rounded float e^(x - max).
    for (int64_t j = 0; j < visible; ++j) yr[j] = float(vm::exp(double(xr[j] - mx)));
    double sum = 0.0;
    for (int64_t j = 0; j < visible; ++j) sum += yr[j];
    float inv = float(1.0 / sum);
    for (int64_t j = 0; j < visible; ++j) yr[j] *= inv;
    for (int64_t j = visible; j < p.cols; ++j) yr[j] = 0.0f;
  }
}

}  // namespace forge::cpu
