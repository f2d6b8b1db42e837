#include <algorithm>
#include <cmath>

#include "cpu/gather_kernels.h"
#include "cpu/isa_clones.h"
#include "cpu/kernels.h"
#include "cpu/lanes.h"
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
    const float mx = lane_max(xr, visible);
    // exp in double rounded once: the correctly rounded float e^(x - max).
    for (int64_t j = 0; j < visible; ++j) yr[j] = float(vm::exp(double(xr[j] - mx)));
    const double sum = lane_sum(visible, [&](int64_t j) { return double(yr[j]); });
    float inv = float(1.0 / sum);
    for (int64_t j = 0; j < visible; ++j) yr[j] *= inv;
    for (int64_t j = visible; j < p.cols; ++j) yr[j] = 0.0f;
  }
}

// Rows [lo, hi) of the softmax backward: dx = y (dy - y . dy), the dot in
// double.
FORGE_ISA_CLONES void softmax_bwd_rows(const float* py, const float* pdy, const SoftmaxPlan& p, float* pdx, int64_t lo,
                                       int64_t hi) {
  const int64_t cols = p.cols;
  for (int64_t r = lo; r < hi; ++r) {
    const float* yr = py + r * cols;
    const float* gr = pdy + r * cols;
    float* dr = pdx + r * cols;
    // A causal row's masked entries are not read; their dx is zero.
    const int64_t visible = p.visible(r);
    const double dot = lane_sum(visible, [&](int64_t j) { return double(yr[j]) * gr[j]; });
    for (int64_t j = 0; j < visible; ++j) dr[j] = float(yr[j] * (gr[j] - dot));
    for (int64_t j = visible; j < cols; ++j) dr[j] = 0.0f;
  }
}

// Rows [lo, hi) of cross_entropy_in_place: softmax_rows' steps in place,
// then ce_bwd's, so the gradient is theirs bit for bit; the loss is
// logsumexp - x[id] in double, from the same max and sum.
FORGE_ISA_CLONES void cross_entropy_rows(float* px, const uint32_t* id, int64_t cols, int64_t pitch, float scale,
                                         float* loss, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    float* xr = px + r * pitch;
    const int64_t t = int64_t(id[r]);
    const float mx = lane_max(xr, cols);
    const float xt = xr[t];
    for (int64_t j = 0; j < cols; ++j) xr[j] = float(vm::exp(double(xr[j] - mx)));
    const double sum = lane_sum(cols, [&](int64_t j) { return double(xr[j]); });
    loss[r] = float(double(mx) + std::log(sum) - double(xt));
    const float inv = float(1.0 / sum);
    for (int64_t j = 0; j < cols; ++j) {
      const float prob = xr[j] * inv;
      xr[j] = (prob - (j == t ? 1.0f : 0.0f)) * scale;
    }
  }
}

}  // namespace

void cross_entropy_in_place(Tensor& logits, const Tensor& ids, float scale, const RowsPlan& p, Tensor& loss) {
  float* px = logits.data<float>();
  const auto* id = static_cast<const uint32_t*>(ids.raw_data());
  float* pl = loss.data<float>();
  parallel_for(p.rows, 16 * p.cols,
               [&](int64_t lo, int64_t hi) { cross_entropy_rows(px, id, p.cols, p.pitch, scale, pl, lo, hi); });
}

void softmax(const Tensor& x, const SoftmaxPlan& p, Tensor& out) {
  const float* px = x.data<float>();
  float* po = out.data<float>();
  parallel_for(p.rows, 16 * p.cols, [&](int64_t lo, int64_t hi) { softmax_rows(px, p, po, lo, hi); });
}

void softmax_bwd(const Tensor& y, const Tensor& dy, const SoftmaxPlan& p, Tensor& dx) {
  const float* py = y.data<float>();    // [rows, cols]
  const float* pdy = dy.data<float>();  // [rows, cols]
  float* pdx = dx.data<float>();        // [rows, cols]
  parallel_for(p.rows, 4 * p.cols, [&](int64_t lo, int64_t hi) { softmax_bwd_rows(py, pdy, p, pdx, lo, hi); });
}

}  // namespace forge::cpu
