// rope (rotation from a host-built cos/sin table), rms_norm (plain and with
// the residual add) and rms_norm_bwd.
#include <cmath>
#include <vector>

#include "cpu/llama_kernels.h"

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

void rms_norm(const Tensor& x, const Tensor* residual, const Tensor& weight, const RowsPlan& p, Tensor& y,
              Tensor* sum) {
  const float* px = x.data<float>();
  const float* pr = residual ? residual->data<float>() : nullptr;
  const float* pw = weight.data<float>();
  float* py = y.data<float>();
  float* ps = sum ? sum->data<float>() : nullptr;
  std::vector<float> h(size_t(p.cols));
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = px + r * p.cols;
    double sq = 0;
    for (int64_t j = 0; j < p.cols; ++j) {
      h[j] = pr ? xr[j] + pr[r * p.cols + j] : xr[j];
      if (ps) ps[r * p.cols + j] = h[j];
      sq += double(h[j]) * h[j];
    }
    float rstd = float(1.0 / std::sqrt(sq / double(p.cols) + double(p.eps)));
    for (int64_t j = 0; j < p.cols; ++j) py[r * p.cols + j] = (h[j] * rstd) * pw[j];
  }
}

void rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, const RowsPlan& p, Tensor& dx,
                  Tensor& dweight) {
  const float* px = x.data<float>();
  const float* pw = weight.data<float>();
  const float* pdy = dy.data<float>();
  float* pdx = dx.data<float>();
  std::vector<double> dw(size_t(p.cols), 0.0);
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = px + r * p.cols;
    const float* gr = pdy + r * p.cols;
    double sq = 0;
    for (int64_t j = 0; j < p.cols; ++j) sq += double(xr[j]) * xr[j];
    double rstd = 1.0 / std::sqrt(sq / double(p.cols) + double(p.eps));
    double dot = 0;  // sum_j dy w xhat
    for (int64_t j = 0; j < p.cols; ++j) {
      double xhat = xr[j] * rstd;
      dot += double(gr[j]) * pw[j] * xhat;
      dw[j] += double(gr[j]) * xhat;
    }
    double mean_dot = dot / double(p.cols);
    for (int64_t j = 0; j < p.cols; ++j)
      pdx[r * p.cols + j] = float(rstd * (double(gr[j]) * pw[j] - xr[j] * rstd * mean_dot));
  }
  float* pdw = dweight.data<float>();
  for (int64_t j = 0; j < p.cols; ++j) pdw[j] = float(dw[j]);
}

}  // namespace forge::cpu
