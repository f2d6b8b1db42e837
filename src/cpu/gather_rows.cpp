// CPU row-wise ops with one id per row: gather_nll, ce_bwd, scatter_add_rows.
#include <cmath>

#include "cpu/gather_kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

void gather_nll(const Tensor& probs, const Tensor& ids, const RowsPlan& p, Tensor& out) {
  const auto* id = static_cast<const uint32_t*>(ids.raw_data());
  const float* pr = probs.data<float>();  // [rows, cols]
  float* o = out.data<float>();           // [rows]
  for (int64_t r = 0; r < p.rows; ++r) o[r] = -std::log(pr[r * p.cols + id[r]]);
}

void ce_bwd(const Tensor& probs, const Tensor& ids, float scale, const RowsPlan& p, Tensor& out) {
  const auto* id = static_cast<const uint32_t*>(ids.raw_data());
  const float* pr = probs.data<float>();  // [rows, cols]
  float* o = out.data<float>();           // [rows, cols]
  parallel_for(p.rows, p.cols, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* pi = pr + r * p.cols;
      float* oi = o + r * p.cols;
      for (int64_t j = 0; j < p.cols; ++j) oi[j] = (pi[j] - (j == int64_t(id[r]) ? 1.0f : 0.0f)) * scale;
    }
  });
}

void scatter_add_rows(Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p) {
  const auto* id = static_cast<const uint32_t*>(ids.raw_data());
  const float* s = src.data<float>();  // [rows, cols]
  float* d = dst.data<float>();        // [vocab, cols]
  // Columns spread over the threads: rows sharing an id add in row order.
  parallel_for(p.cols, p.rows, [&](int64_t lo, int64_t hi) {
    for (int64_t r = 0; r < p.rows; ++r) {
      float* di = d + int64_t(id[r]) * p.cols;
      const float* si = s + r * p.cols;
      for (int64_t j = lo; j < hi; ++j) di[j] += si[j];
    }
  });
}

}  // namespace forge::cpu
