#include "cpu/kernels.h"

namespace forge::cpu {

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = pa[i] + pb[i];
}

void scale(const Tensor& x, float alpha, Tensor& out) {
  const float* px = x.data<float>();
  float* po = out.data<float>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = px[i] * alpha;
}

}  // namespace forge::cpu
