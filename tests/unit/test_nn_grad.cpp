// Every backward op of forge/ops/nn.h against central finite differences of a
// double-precision reference forward written here, on the CPU. The loss is
// L = sum(dy * f(inputs)) for a random dy, so dL/dinput is what the backward
// op returns. Step h = 1e-5: truncation ~h^2 and round-off ~1e-16 / h are
// both far below the f32 rounding of the op's outputs that the tolerances
// allow for.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "forge/ops.h"
#include "unit/finite_diff.h"

using namespace forge;
using namespace forge::testing;

namespace {

// ---- Reference forwards in double ----------------------------------------

double gelu_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double silu_ref(double x) { return x / (1 + std::exp(-x)); }
double relu_ref(double x) { return x > 0 ? x : 0; }

std::vector<double> layernorm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                                  const std::vector<double>& beta, size_t cols, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    const double* xr = &x[r * cols];
    double mean = 0, var = 0;
    for (size_t j = 0; j < cols; ++j) mean += xr[j];
    mean /= double(cols);
    for (size_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= double(cols);
    for (size_t j = 0; j < cols; ++j) y[r * cols + j] = (xr[j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
  }
  return y;
}

// Row softmax; with causal, row r (query r % q_len) sees keys j <= r % q_len + offset.
std::vector<double> softmax_ref(const std::vector<double>& x, size_t cols, bool causal, size_t q_len,
                                size_t offset) {
  std::vector<double> y(x.size(), 0.0);
  for (size_t r = 0; r < x.size() / cols; ++r) {
    size_t visible = causal ? std::min(cols, r % q_len + offset + 1) : cols;
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j < visible; ++j) mx = std::max(mx, x[r * cols + j]);
    for (size_t j = 0; j < visible; ++j) sum += std::exp(x[r * cols + j] - mx);
    for (size_t j = 0; j < visible; ++j) y[r * cols + j] = std::exp(x[r * cols + j] - mx) / sum;
  }
  return y;
}

// ---- Tests ---------------------------------------------------------------

TEST(NnGrad, Activations) {
  const size_t n = 41;
  auto xs = uniform(n, 1, -4.0f, 4.0f);
  for (auto& v : xs)
    if (std::fabs(v) < 1e-3f) v = 0.5f;  // keep relu's kink out of the differences
  auto dys = uniform(n, 2, -1.0f, 1.0f);
  Tensor x = Tensor::from_vector(xs, {int64_t(n)}), dy = Tensor::from_vector(dys, {int64_t(n)});
  struct Case {
    const char* name;
    double (*ref)(double);
    Tensor (*bwd)(const Tensor&, const Tensor&);
  };
  for (const Case& c : {Case{"gelu", gelu_ref, gelu_bwd}, Case{"silu", silu_ref, silu_bwd},
                        Case{"relu", relu_ref, relu_bwd}}) {
    auto numeric = numeric_grad(widen(xs), [&](const std::vector<double>& v) {
      double s = 0;
      for (size_t i = 0; i < n; ++i) s += dys[i] * c.ref(v[i]);
      return s;
    });
    // Derivatives of size <= ~1.2 times |dy| <= 1, rounded once to f32.
    EXPECT_TRUE(grads_close(c.bwd(x, dy).to_vector<float>(), numeric, 1e-6, 1e-6)) << c.name;
  }
}

TEST(NnGrad, LayerNorm) {
  for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {3, 17}, {2, 64}}) {
    const double eps = 1e-5;
    auto xs = uniform(rows * cols, 10, -2.0f, 3.0f);
    auto gs = uniform(cols, 11, 0.5f, 1.5f);
    auto bs = uniform(cols, 12, -1.0f, 1.0f);
    auto dys = uniform(rows * cols, 13, -1.0f, 1.0f);
    Shape s{int64_t(rows), int64_t(cols)};
    auto grads = layernorm_bwd(Tensor::from_vector(xs, s), Tensor::from_vector(gs, {int64_t(cols)}),
                               Tensor::from_vector(dys, s), float(eps));
    auto x = widen(xs), g = widen(gs), b = widen(bs);
    auto nx = numeric_grad(x, [&](const std::vector<double>& v) { return dot(layernorm_ref(v, g, b, cols, eps), dys); });
    auto ng = numeric_grad(g, [&](const std::vector<double>& v) { return dot(layernorm_ref(x, v, b, cols, eps), dys); });
    auto nb = numeric_grad(b, [&](const std::vector<double>& v) { return dot(layernorm_ref(x, g, v, cols, eps), dys); });
    // dx ~ rstd * O(1) (rstd up to ~1/sqrt(eps) for a one-value row, where
    // dx is exactly 0); dgamma, dbeta are sums of `rows` O(1) terms.
    EXPECT_TRUE(grads_close(grads.dx.to_vector<float>(), nx, 2e-6, 1e-5)) << rows << "x" << cols;
    EXPECT_TRUE(grads_close(grads.dgamma.to_vector<float>(), ng, 2e-6, 1e-5)) << rows << "x" << cols;
    EXPECT_TRUE(grads_close(grads.dbeta.to_vector<float>(), nb, 2e-6, 1e-5)) << rows << "x" << cols;
  }
}

TEST(NnGrad, SoftmaxBwd) {
  struct Case {
    size_t rows, cols;
    bool causal;
    size_t q_len, offset;
  };
  for (const Case& c : {Case{3, 17, false, 1, 0}, Case{5, 5, true, 5, 0}, Case{6, 9, true, 3, 4}}) {
    auto xs = uniform(c.rows * c.cols, 20, -3.0f, 3.0f);
    auto dys = uniform(c.rows * c.cols, 21, -1.0f, 1.0f);
    Shape s{int64_t(c.rows), int64_t(c.cols)};
    SoftmaxOptions o;
    o.causal = c.causal;
    o.q_len = int64_t(c.q_len);
    o.key_offset = int64_t(c.offset);
    Tensor y = softmax(Tensor::from_vector(xs, s), o);
    auto analytic = softmax_bwd(y, Tensor::from_vector(dys, s)).to_vector<float>();
    auto numeric = numeric_grad(widen(xs), [&](const std::vector<double>& v) {
      return dot(softmax_ref(v, c.cols, c.causal, c.q_len, c.offset), dys);
    });
    // From the f32 forward output y (relative error ~1e-7): 1e-6 + 1e-5 relative.
    EXPECT_TRUE(grads_close(analytic, numeric, 1e-6, 1e-5)) << c.rows << "x" << c.cols << " causal " << c.causal;
  }
}

TEST(NnGrad, SumRowsIsTheBiasGradient) {
  // L(b) = sum(dy * (x + b)) with b broadcast over rows: dL/db = sum_rows(dy).
  const size_t rows = 7, cols = 13;
  auto dys = uniform(rows * cols, 30, -1.0f, 1.0f);
  auto xs = uniform(rows * cols, 31, -1.0f, 1.0f);
  auto numeric = numeric_grad(std::vector<double>(cols, 0.25), [&](const std::vector<double>& b) {
    double s = 0;
    for (size_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < cols; ++j) s += dys[r * cols + j] * (xs[r * cols + j] + b[j]);
    return s;
  });
  auto analytic = sum_rows(Tensor::from_vector(dys, {int64_t(rows), int64_t(cols)})).to_vector<float>();
  EXPECT_TRUE(grads_close(analytic, numeric, 1e-6, 1e-6));
}

TEST(NnGrad, DropoutBackwardIsDropoutOfDy) {
  // The forward's mask, read off dropout of an all-ones tensor.
  const size_t n = 64;
  const float p = 0.25f;
  const uint64_t seed = 99;
  auto mask = dropout(Tensor::from_vector(std::vector<float>(n, 1.0f), {int64_t(n)}), p, seed).to_vector<float>();
  auto dys = uniform(n, 40, -1.0f, 1.0f);
  auto numeric = numeric_grad(widen(uniform(n, 41, -1.0f, 1.0f)), [&](const std::vector<double>& x) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += dys[i] * x[i] * mask[i];
    return s;
  });
  auto analytic = dropout(Tensor::from_vector(dys, {int64_t(n)}), p, seed).to_vector<float>();
  EXPECT_TRUE(grads_close(analytic, numeric, 1e-6, 1e-6));
}

}  // namespace
