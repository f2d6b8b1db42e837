#include <algorithm>
#include <cmath>

#include "cpu/isa_clones.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/vec_math.h"

namespace forge::cpu {

namespace {

// Rows [lo, hi) of the softmax.
FORGE_ISA_CLONES void softmax_rows(const float* px, const SoftmaxPlan& p, float* po, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = px + r * p.cols;
    float* yr = po + r * p.cols;
    // Keys [0, visible) take part; the rest are exact zeros.
    const int64_t visible = p.visible(r);
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

}  // namespace

void softmax(const Tensor& x, const SoftmaxPlan& p, Tensor& out) {
  const float* px = x.data<float>();
  float* po = out.data<float>();
  parallel_for(p.rows, 16 * p.cols, [&](int64_t lo, int64_t hi) { softmax_rows(px, p, po, lo, hi); });
}

// Row by row, the dot product in double.
void softmax_bwd(const Tensor& y, const Tensor& dy, const SoftmaxPlan& p, Tensor& dx) {
  const int64_t rows = p.rows, cols = p.cols;
  const float* py = y.data<float>();    // [rows, cols]
  const float* pdy = dy.data<float>();  // [rows, cols]
  float* pdx = dx.data<float>();        // [rows, cols]
  parallel_for(rows, 4 * cols, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* yr = py + r * cols;
      const float* gr = pdy + r * cols;
      // A causal row's masked entries are not read; their dx is zero.
      const int64_t visible = p.visible(r);
      double dot = 0;
      for (int64_t j = 0; j < visible; ++j) dot += double(yr[j]) * gr[j];
      for (int64_t j = 0; j < visible; ++j) pdx[r * cols + j] = float(yr[j] * (gr[j] - dot));
      for (int64_t j = visible; j < cols; ++j) pdx[r * cols + j] = 0.0f;
    }
  });
}

}  // namespace forge::cpu
