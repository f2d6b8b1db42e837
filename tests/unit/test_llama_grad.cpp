// The backwards of forge/ops/llama.h and train.h against central finite
// differences of double-precision reference forwards written here, on the
// CPU. The loss is L = sum(dy * f(inputs)) for a random dy (or the op's own
// scalar loss), so dL/dinput is what the backward op returns. Step h = 1e-5:
// truncation ~h^2 and round-off ~1e-16 / h both sit far below the f32
// rounding of the ops' outputs that the tolerances allow for.
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

Tensor tensor(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, s); }

TEST(LlamaGrad, RopeBackward) {
  // x [seq 3, hidden 8], head_dim 4, pos 5, theta 100: the reference uses the
  // op's angles, f32(f32(p) * f32(theta^(-2i/d))), in double.
  const int64_t seq = 3, hidden = 8, hd = 4, pos = 5;
  const double theta = 100.0;
  auto x = uniform(seq * hidden, 1), dy = uniform(seq * hidden, 2);
  auto forward = [&](const std::vector<double>& v) {
    std::vector<double> y(v);
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < hidden / hd; ++h)
        for (int64_t i = 0; i < hd / 2; ++i) {
          float inv = float(std::pow(theta, -double(2 * i) / double(hd)));
          double ang = double(float(pos + s) * inv);
          int64_t a = s * hidden + h * hd + i, b = a + hd / 2;
          y[a] = v[a] * std::cos(ang) - v[b] * std::sin(ang);
          y[b] = v[b] * std::cos(ang) + v[a] * std::sin(ang);
        }
    return y;
  };
  auto want = numeric_grad(widen(x), [&](const std::vector<double>& v) { return dot(forward(v), dy); });
  Tensor g = tensor(dy, {seq, hidden});
  rope_backward(g, hd, pos, theta);
  EXPECT_TRUE(grads_close(g.to_vector<float>(), want, 1e-6, 1e-5));
  // And the forward matches the reference.
  Tensor y = tensor(x, {seq, hidden});
  rope(y, hd, pos, theta);
  std::vector<double> ref = forward(widen(x));
  EXPECT_TRUE(grads_close(y.to_vector<float>(), ref, 1e-6, 1e-6));
}

TEST(LlamaGrad, RmsNormBwd) {
  const int64_t rows = 3, cols = 17;
  const float eps = 1e-5f;
  auto x = uniform(rows * cols, 3, -2.0f, 2.0f), w = uniform(cols, 4, 0.5f, 1.5f), dy = uniform(rows * cols, 5);
  auto forward = [&](const std::vector<double>& xv, const std::vector<double>& wv) {
    std::vector<double> y(xv.size());
    for (int64_t r = 0; r < rows; ++r) {
      double ms = 0;
      for (int64_t j = 0; j < cols; ++j) ms += xv[r * cols + j] * xv[r * cols + j];
      double rstd = 1.0 / std::sqrt(ms / cols + eps);
      for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = xv[r * cols + j] * rstd * wv[j];
    }
    return y;
  };
  auto want_dx = numeric_grad(widen(x), [&](const std::vector<double>& v) { return dot(forward(v, widen(w)), dy); });
  auto want_dw = numeric_grad(widen(w), [&](const std::vector<double>& v) { return dot(forward(widen(x), v), dy); });
  RmsNormGrads g = rms_norm_bwd(tensor(x, {rows, cols}), tensor(w, {cols}), tensor(dy, {rows, cols}), eps);
  EXPECT_TRUE(grads_close(g.dx.to_vector<float>(), want_dx, 1e-5, 1e-4));
  EXPECT_TRUE(grads_close(g.dweight.to_vector<float>(), want_dw, 1e-5, 1e-4));
}

TEST(LlamaGrad, SiluGateBackward) {
  const int64_t n = 129;
  auto u = uniform(n, 6, -6.0f, 6.0f), gt = uniform(n, 7, -2.0f, 2.0f), dy = uniform(n, 8);
  auto forward = [&](const std::vector<double>& uv, const std::vector<double>& gv) {
    std::vector<double> y(uv.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = uv[i] / (1 + std::exp(-uv[i])) * gv[i];
    return y;
  };
  auto want_u = numeric_grad(widen(u), [&](const std::vector<double>& v) { return dot(forward(v, widen(gt)), dy); });
  auto want_g = numeric_grad(widen(gt), [&](const std::vector<double>& v) { return dot(forward(widen(u), v), dy); });
  SiluGateGrads g = silu_gate_fused_backward(tensor(u, {n}), tensor(gt, {n}), tensor(dy, {n}));
  EXPECT_TRUE(grads_close(g.grad_up.to_vector<float>(), want_u, 1e-6, 1e-5));
  EXPECT_TRUE(grads_close(g.grad_gate.to_vector<float>(), want_g, 1e-6, 1e-5));
}

TEST(LlamaGrad, BinaryBackwards) {
  const int64_t n = 17;
  auto a = uniform(n, 9), b = uniform(n, 10), dy = uniform(n, 11);
  using F = std::function<double(double, double)>;
  auto check = [&](const F& f, const BinaryGrads& g, const char* what) {
    auto want_a = numeric_grad(widen(a), [&](const std::vector<double>& v) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += dy[i] * f(v[i], b[i]);
      return s;
    });
    auto want_b = numeric_grad(widen(b), [&](const std::vector<double>& v) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += dy[i] * f(a[i], v[i]);
      return s;
    });
    EXPECT_TRUE(grads_close(g.grad_a.to_vector<float>(), want_a, 1e-7, 1e-6)) << what;
    EXPECT_TRUE(grads_close(g.grad_b.to_vector<float>(), want_b, 1e-7, 1e-6)) << what;
  };
  Tensor g = tensor(dy, {n}), ta = tensor(a, {n}), tb = tensor(b, {n});
  check([](double x, double y) { return x + y; }, add_backward(g), "add");
  check([](double x, double y) { return x - y; }, sub_backward(g), "sub");
  check([](double x, double y) { return x * y; }, mul_backward(g, ta, tb), "mul");
}

TEST(LlamaGrad, MseAndCrossEntropyBackward) {
  const int64_t n = 17;
  auto p = uniform(n, 12), t = uniform(n, 13);
  // L = sum 0.5 (p - t)^2.
  auto want = numeric_grad(widen(p), [&](const std::vector<double>& v) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += 0.5 * (v[i] - t[i]) * (v[i] - t[i]);
    return s;
  });
  EXPECT_TRUE(grads_close(mse_loss_backward(tensor(p, {n}), tensor(t, {n})).to_vector<float>(), want, 1e-7, 1e-6));

  // L = sum_r (logsumexp(z_r) - z_r[target_r]) over 3 rows of 17.
  const int64_t rows = 3, v = 17;
  auto z = uniform(rows * v, 14, -3.0f, 3.0f);
  std::vector<uint32_t> ids = {0, 16, 5};
  auto ce = [&](const std::vector<double>& zv) {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < v; ++j) mx = std::max(mx, zv[r * v + j]);
      for (int64_t j = 0; j < v; ++j) sum += std::exp(zv[r * v + j] - mx);
      s += mx + std::log(sum) - zv[r * v + ids[r]];
    }
    return s;
  };
  auto want_z = numeric_grad(widen(z), ce);
  Tensor logits = tensor(z, {rows, v});
  Tensor targets = Tensor::from_vector(ids, {rows});
  EXPECT_TRUE(grads_close(cross_entropy_loss_backward(logits, targets).to_vector<float>(), want_z, 1e-6, 1e-5));
  // The loss itself matches the reference.
  auto losses = cross_entropy_loss(logits, targets).to_vector<float>();
  EXPECT_NEAR(double(losses[0]) + losses[1] + losses[2], ce(widen(z)), 1e-5);
}

}  // namespace
