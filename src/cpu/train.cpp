// Elementwise training updates and the MSE loss.
#include <algorithm>
#include <cmath>

#include "cpu/parallel.h"
#include "cpu/train_kernels.h"

namespace forge::cpu {

void axpy_inplace(Tensor& dst, const Tensor& src, float alpha) {
  float* pd = dst.data<float>();
  const float* ps = src.data<float>();
  parallel_for(dst.numel(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pd[i] = pd[i] + alpha * ps[i];
  });
}

void scale_inplace(Tensor& dst, float alpha) {
  float* pd = dst.data<float>();
  parallel_for(dst.numel(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) pd[i] *= alpha;
  });
}

void clip_inplace(Tensor& dst, const Tensor& norm_sq, float max_norm) {
  float coef = std::min(1.0f, max_norm / (std::sqrt(norm_sq.data<float>()[0]) + 1e-6f));
  scale_inplace(dst, coef);
}

void mse(const Tensor& pred, const Tensor& target, Tensor& out) {
  const float* pp = pred.data<float>();
  const float* pt = target.data<float>();
  float* po = out.data<float>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    float d = pp[i] - pt[i];
    po[i] = 0.5f * (d * d);
  }
}

}  // namespace forge::cpu
