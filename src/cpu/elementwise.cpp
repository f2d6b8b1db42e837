#include "cpu/kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  parallel_for(out.numel(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = pa[i] + pb[i];
  });
}

void scale(const Tensor& x, float alpha, Tensor& out) {
  const float* px = x.data<float>();
  float* po = out.data<float>();
  parallel_for(out.numel(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = px[i] * alpha;
  });
}

}  // namespace forge::cpu
