// dropout (Philox4x32-10 counter-based mask) and the AdamW update.
#include <algorithm>
#include <cmath>

#include "cpu/nn_kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

uint32_t philox_word0(uint32_t lo, uint32_t hi, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // key schedule increments
  uint32_t c0 = lo, c1 = hi, c2 = 0, c3 = 0;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kM0) * c0;
    uint64_t p1 = uint64_t(kM1) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = uint32_t(p1);
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = uint32_t(p0);
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return c0;
}

void dropout(const Tensor& x, const DropoutPlan& plan, Tensor& y) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  uint32_t k0 = uint32_t(plan.seed), k1 = uint32_t(plan.seed >> 32);
  parallel_for(x.numel(), 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      uint32_t r = philox_word0(uint32_t(uint64_t(i)), uint32_t(uint64_t(i) >> 32), k0, k1);
      py[i] = r >= plan.threshold ? px[i] * plan.scale : 0.0f;
    }
  });
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
