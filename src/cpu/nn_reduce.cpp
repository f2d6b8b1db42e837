// sum_rows and sumsq, accumulated in double.
#include <vector>

#include "cpu/nn_kernels.h"

namespace forge::cpu {

void sum_rows(const Tensor& x, int64_t rows, int64_t cols, Tensor& out) {
  const float* px = x.data<float>();  // [rows, cols]
  std::vector<double> acc(size_t(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * cols;
    for (int64_t j = 0; j < cols; ++j) acc[j] += xr[j];
  }
  float* po = out.data<float>();  // [cols]
  for (int64_t j = 0; j < cols; ++j) po[j] = float(acc[j]);
}

double sumsq(const Tensor& x) {
  const float* px = x.data<float>();
  double acc = 0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) acc += double(px[i]) * px[i];
  return acc;
}

}  // namespace forge::cpu
