#include <algorithm>
#include <cmath>

#include "cpu/isa_clones.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/vec_math.h"

namespace forge::cpu {

namespace {

// Independent accumulators for a row's max and sum: one chain of dependent
// adds (or maxes) waits a full latency per element, which on a 50,257-wide
// row of logits took longer than its exps. A fixed count, so the order of the
// sum does not depend on the ISA.
constexpr int kRowLanes = 8;

// max over x[0, n).
float row_max(const float* x, int64_t n) {
  float lane[kRowLanes];
  std::fill(lane, lane + kRowLanes, -INFINITY);
  int64_t j = 0;
  for (; j + kRowLanes <= n; j += kRowLanes)
    for (int l = 0; l < kRowLanes; ++l) lane[l] = std::max(lane[l], x[j + l]);
  for (; j < n; ++j) lane[0] = std::max(lane[0], x[j]);
  float mx = lane[0];
  for (int l = 1; l < kRowLanes; ++l) mx = std::max(mx, lane[l]);
  return mx;
}

// sum over y[0, n), in double.
double row_sum(const float* y, int64_t n) {
  double lane[kRowLanes] = {};
  int64_t j = 0;
  for (; j + kRowLanes <= n; j += kRowLanes)
    for (int l = 0; l < kRowLanes; ++l) lane[l] += y[j + l];
  for (; j < n; ++j) lane[0] += y[j];
  double sum = 0.0;
  for (double v : lane) sum += v;
  return sum;
}

// Rows [lo, hi) of the softmax.
FORGE_ISA_CLONES void softmax_rows(const float* px, const SoftmaxPlan& p, float* po, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = px + r * p.cols;
    float* yr = po + r * p.cols;
    // Keys [0, visible) take part; the rest are exact zeros.
    const int64_t visible = p.visible(r);
    const float mx = row_max(xr, visible);
    // exp in double rounded once: the correctly rounded float e^(x - max).
    for (int64_t j = 0; j < visible; ++j) yr[j] = float(vm::exp(double(xr[j] - mx)));
    const double sum = row_sum(yr, visible);
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
