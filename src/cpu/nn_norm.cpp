// layernorm and layernorm_bwd, row by row in double.
#include <cmath>
#include <vector>

#include "cpu/isa_clones.h"
#include "cpu/lanes.h"
#include "cpu/nn_kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

namespace {

struct RowStats {
  double mean, rstd;
};

// Mean and 1 / sqrt(biased variance + eps) of one row, two passes.
inline RowStats row_stats(const float* x, int64_t cols, float eps) {
  const double mean = lane_sum(cols, [&](int64_t j) { return double(x[j]); }) / double(cols);
  const double var = lane_sum(cols, [&](int64_t j) { return (x[j] - mean) * (x[j] - mean); }) / double(cols);
  return {mean, 1.0 / std::sqrt(var + double(eps))};
}

// Rows [lo, hi) of the layernorm.
FORGE_ISA_CLONES void layernorm_rows(const float* px, const float* pg, const float* pb, float eps, int64_t cols,
                                     float* py, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = px + r * cols;
    float* yr = py + r * cols;
    const RowStats s = row_stats(xr, cols, eps);
    for (int64_t j = 0; j < cols; ++j) yr[j] = float((xr[j] - s.mean) * s.rstd * pg[j] + pb[j]);
  }
}

// dx of rows [lo, hi), keeping each row's statistics in stats[r]:
// dxhat = dy * gamma; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
FORGE_ISA_CLONES void layernorm_bwd_rows(const float* px, const float* pg, const float* pdy, float eps, int64_t cols,
                                         float* pdx, RowStats* stats, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = px + r * cols;
    const float* gr = pdy + r * cols;
    const RowStats s = stats[r] = row_stats(xr, cols, eps);
    const double m1 = lane_sum(cols, [&](int64_t j) { return double(gr[j]) * pg[j]; }) / double(cols);
    const double m2 =
        lane_sum(cols, [&](int64_t j) { return double(gr[j]) * pg[j] * ((xr[j] - s.mean) * s.rstd); }) / double(cols);
    for (int64_t j = 0; j < cols; ++j)
      pdx[r * cols + j] = float(s.rstd * (double(gr[j]) * pg[j] - m1 - ((xr[j] - s.mean) * s.rstd) * m2));
  }
}

// dgamma and dbeta of columns [lo, hi), each summed over the rows in order.
FORGE_ISA_CLONES void layernorm_bwd_columns(const float* px, const float* pdy, const RowStats* stats, int64_t rows,
                                            int64_t cols, float* pdg, float* pdb, int64_t lo, int64_t hi) {
  std::vector<double> dg(size_t(hi - lo), 0.0), db(size_t(hi - lo), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * cols;
    const float* gr = pdy + r * cols;
    const RowStats s = stats[r];
    for (int64_t j = lo; j < hi; ++j) {
      dg[size_t(j - lo)] += double(gr[j]) * ((xr[j] - s.mean) * s.rstd);
      db[size_t(j - lo)] += gr[j];
    }
  }
  for (int64_t j = lo; j < hi; ++j) {
    pdg[j] = float(dg[size_t(j - lo)]);
    pdb[j] = float(db[size_t(j - lo)]);
  }
}

}  // namespace

void layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, int64_t rows, int64_t cols,
               Tensor& y) {
  const float* px = x.data<float>();      // [rows, cols]
  const float* pg = gamma.data<float>();  // [cols]
  const float* pb = beta.data<float>();   // [cols]
  float* py = y.data<float>();            // [rows, cols]
  parallel_for(rows, 4 * cols, [&](int64_t lo, int64_t hi) { layernorm_rows(px, pg, pb, eps, cols, py, lo, hi); });
}

// dx row by row (rows spread over the threads), then dgamma and dbeta column
// by column (columns spread), each column summed over the rows in order: the
// same sums whatever the thread count.
void layernorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& dy, float eps, int64_t rows, int64_t cols,
                   Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const float* px = x.data<float>();      // [rows, cols]
  const float* pg = gamma.data<float>();  // [cols]
  const float* pdy = dy.data<float>();    // [rows, cols]
  float* pdx = dx.data<float>();          // [rows, cols]
  std::vector<RowStats> stats(static_cast<size_t>(rows));
  parallel_for(rows, 8 * cols,
               [&](int64_t lo, int64_t hi) { layernorm_bwd_rows(px, pg, pdy, eps, cols, pdx, stats.data(), lo, hi); });
  float* pdg = dgamma.data<float>();  // [cols]
  float* pdb = dbeta.data<float>();   // [cols]
  parallel_for(cols, 4 * rows, [&](int64_t lo, int64_t hi) {
    layernorm_bwd_columns(px, pdy, stats.data(), rows, cols, pdg, pdb, lo, hi);
  });
}

}  // namespace forge::cpu
