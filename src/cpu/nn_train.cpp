// dropout (Philox4x32-10 counter-based mask) and the AdamW update.
#include <algorithm>
#include <cmath>

#include "cpu/isa_clones.h"
#include "cpu/nn_kernels.h"
#include "cpu/parallel.h"
#include "cpu/philox.h"

namespace forge::cpu {

namespace {

// y[i] = x[i] * scale where element i's word is >= threshold, else 0, for i
// in [lo, hi): the Philox rounds vectorize (about 10 vector operations a
// round for 8 or 16 elements).
FORGE_ISA_CLONES void dropout_range(const float* x, float* y, int64_t lo, int64_t hi, DropoutPlan plan) {
  const uint32_t k0 = uint32_t(plan.seed), k1 = uint32_t(plan.seed >> 32);
  for (int64_t i = lo; i < hi; ++i) {
    const uint32_t r = philox_word0(uint32_t(uint64_t(i)), uint32_t(uint64_t(i) >> 32), k0, k1);
    y[i] = r >= plan.threshold ? x[i] * plan.scale : 0.0f;
  }
}

}  // namespace

void dropout(const Tensor& x, const DropoutPlan& plan, Tensor& y) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(x.numel(), 16, [&](int64_t lo, int64_t hi) { dropout_range(px, py, lo, hi, plan); });
}

namespace {

// One AdamW update, f32 throughout, in the order shaders/adamw_update.wgsl
// evaluates it; g as used (clipped or not).
inline void adamw_element(float& param, float g, float& m, float& v, const AdamWPlan& a) {
  const float p = param * a.decay;
  const float mi = a.beta1 * m + a.one_minus_beta1 * g;
  const float vi = a.beta2 * v + a.one_minus_beta2 * (g * g);
  const float denom = std::sqrt(vi) / a.sqrt_bias_c2 + a.eps;
  param = p - a.step_size * (mi / denom);
  m = mi;
  v = vi;
}

}  // namespace

void adamw(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamWPlan& plan) {
  float* pp = param.data<float>();
  const float* pg = grad.data<float>();
  float* pm = m.data<float>();
  float* pv = v.data<float>();
  parallel_for(param.numel(), 4, [&](int64_t lo, int64_t hi) {
    const AdamWPlan a = plan;  // a local copy: the stores below cannot alias it, so the loop vectorizes
    for (int64_t i = lo; i < hi; ++i) adamw_element(pp[i], pg[i], pm[i], pv[i], a);
  });
}

void adamw_flat(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const Tensor& segments,
                const AdamWPlan& plan, float clip) {
  float* pp = param.data<float>();
  const float* pg = grad.data<float>();
  float* pm = m.data<float>();
  float* pv = v.data<float>();
  const uint32_t* seg = segments.data<uint32_t>();  // [S, 3] (begin, end, decay)
  const int64_t nseg = segments.dim(0);
  // Each thread takes a range of elements and walks the segments meeting it.
  parallel_for(param.numel(), 4, [&](int64_t lo, int64_t hi) {
    int64_t s = 0;
    {
      int64_t a = 0, b = nseg;  // first segment whose end > lo
      while (a < b) {
        const int64_t mid = (a + b) / 2;
        if (int64_t(seg[3 * mid + 1]) <= lo) a = mid + 1;
        else b = mid;
      }
      s = a;
    }
    for (; s < nseg && int64_t(seg[3 * s]) < hi; ++s) {
      const int64_t b = std::max<int64_t>(lo, seg[3 * s]), e = std::min<int64_t>(hi, seg[3 * s + 1]);
      AdamWPlan a = plan;  // a local copy: the stores below cannot alias it, so the loop vectorizes
      if (!seg[3 * s + 2]) a.decay = 1.0f;
      const float c = clip;
      for (int64_t i = b; i < e; ++i) adamw_element(pp[i], pg[i] * c, pm[i], pv[i], a);
    }
  });
}

}  // namespace forge::cpu
