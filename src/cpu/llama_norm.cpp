// rope (rotation from a host-built cos/sin table), rms_norm (plain and with
// the residual add) and rms_norm_bwd.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/isa_clones.h"
#include "cpu/lanes.h"
#include "cpu/llama_kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

void rope(Tensor& x, const Tensor& table, const RopePlan& p) {
  float* px = x.data<float>();
  const float* cs = table.data<float>();  // [seq, half, 2]
  int64_t half = p.head_dim / 2, heads = p.hidden / p.head_dim;
  float sign = p.inverse ? -1.0f : 1.0f;
  for (int64_t t = 0; t < p.tokens; ++t) {
    const float* row_cs = cs + (t % p.seq) * half * 2;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = px + t * p.hidden + h * p.head_dim;
      for (int64_t i = 0; i < half; ++i) {
        float c = row_cs[2 * i], s = sign * row_cs[2 * i + 1];
        float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
  }
}

namespace {

// Rows [lo, hi) of rms_norm: h = x (+ residual), written to ps when given;
// y = (h * rstd) * w with rstd = 1 / sqrt(mean(h^2) + eps), f32 as the WGSL
// kernel rounds it, the sum of squares in double.
FORGE_ISA_CLONES void rms_norm_rows(const float* px, const float* pr, const float* pw, const RowsPlan& p, float* py,
                                    float* ps, int64_t lo, int64_t hi) {
  const int64_t cols = p.cols;
  std::vector<float> h(static_cast<size_t>(cols));
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = px + r * cols;
    for (int64_t j = 0; j < cols; ++j) h[size_t(j)] = pr ? xr[j] + pr[r * cols + j] : xr[j];
    if (ps) std::copy(h.begin(), h.end(), ps + r * cols);
    const double sq = lane_sum(cols, [&](int64_t j) { return double(h[size_t(j)]) * h[size_t(j)]; });
    const float rstd = float(1.0 / std::sqrt(sq / double(cols) + double(p.eps)));
    for (int64_t j = 0; j < cols; ++j) py[r * cols + j] = (h[size_t(j)] * rstd) * pw[j];
  }
}

// dx of rows [lo, hi), keeping each row's rstd in rstds[r]:
// dx = rstd (dy w - xhat mean(dy w xhat)), xhat = x rstd.
FORGE_ISA_CLONES void rms_norm_bwd_rows(const float* px, const float* pw, const float* pdy, const RowsPlan& p,
                                        float* pdx, double* rstds, int64_t lo, int64_t hi) {
  const int64_t cols = p.cols;
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = px + r * cols;
    const float* gr = pdy + r * cols;
    const double sq = lane_sum(cols, [&](int64_t j) { return double(xr[j]) * xr[j]; });
    const double rstd = rstds[r] = 1.0 / std::sqrt(sq / double(cols) + double(p.eps));
    const double mean_dot = lane_sum(cols, [&](int64_t j) { return double(gr[j]) * pw[j] * (xr[j] * rstd); }) /
                            double(cols);
    for (int64_t j = 0; j < cols; ++j) pdx[r * cols + j] = float(rstd * (double(gr[j]) * pw[j] - xr[j] * rstd * mean_dot));
  }
}

// dweight of columns [lo, hi): sum over the rows, in order, of dy xhat.
FORGE_ISA_CLONES void rms_norm_bwd_columns(const float* px, const float* pdy, const double* rstds, int64_t rows,
                                           int64_t cols, float* pdw, int64_t lo, int64_t hi) {
  std::vector<double> dw(size_t(hi - lo), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * cols;
    const float* gr = pdy + r * cols;
    for (int64_t j = lo; j < hi; ++j) dw[size_t(j - lo)] += double(gr[j]) * (xr[j] * rstds[r]);
  }
  for (int64_t j = lo; j < hi; ++j) pdw[j] = float(dw[size_t(j - lo)]);
}

}  // namespace

void rms_norm(const Tensor& x, const Tensor* residual, const Tensor& weight, const RowsPlan& p, Tensor& y,
              Tensor* sum) {
  const float* px = x.data<float>();
  const float* pr = residual ? residual->data<float>() : nullptr;
  const float* pw = weight.data<float>();
  float* py = y.data<float>();
  float* ps = sum ? sum->data<float>() : nullptr;
  parallel_for(p.rows, 4 * p.cols, [&](int64_t lo, int64_t hi) { rms_norm_rows(px, pr, pw, p, py, ps, lo, hi); });
}

// dx row by row (rows spread over the threads), then dweight column by column
// (columns spread), each column summed over the rows in order: the same sums
// whatever the thread count.
void rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, const RowsPlan& p, Tensor& dx,
                  Tensor& dweight) {
  const float* px = x.data<float>();
  const float* pw = weight.data<float>();
  const float* pdy = dy.data<float>();
  float* pdx = dx.data<float>();
  float* pdw = dweight.data<float>();
  std::vector<double> rstds(size_t(p.rows));
  parallel_for(p.rows, 8 * p.cols,
               [&](int64_t lo, int64_t hi) { rms_norm_bwd_rows(px, pw, pdy, p, pdx, rstds.data(), lo, hi); });
  parallel_for(p.cols, 2 * p.rows, [&](int64_t lo, int64_t hi) {
    rms_norm_bwd_columns(px, pdy, rstds.data(), p.rows, p.cols, pdw, lo, hi);
  });
}

}  // namespace forge::cpu
