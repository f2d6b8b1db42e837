// Helpers shared by the backward-op tests: central finite differences of a
// double-precision loss, and the comparison of analytic and numeric gradients.
// Step h = 1e-5: truncation ~h^2 and round-off ~1e-16 / h both sit far below
// the f32 rounding of the ops' outputs that the tolerances allow for.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

namespace forge::testing {

constexpr double kH = 1e-5;

// Deterministic uniform values in [lo, hi).
inline std::vector<float> uniform(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// dL/dv[i] for every i by central differences of loss(v).
inline std::vector<double> numeric_grad(std::vector<double> v,
                                        const std::function<double(const std::vector<double>&)>& loss) {
  std::vector<double> g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    double keep = v[i];
    v[i] = keep + kH;
    double up = loss(v);
    v[i] = keep - kH;
    double down = loss(v);
    v[i] = keep;
    g[i] = (up - down) / (2 * kH);
  }
  return g;
}

// |got - want| <= atol + rtol |want| everywhere; reports the first element outside.
inline ::testing::AssertionResult grads_close(const std::vector<float>& got, const std::vector<double>& want,
                                              double atol, double rtol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])))
      return ::testing::AssertionFailure() << "element " << i << ": analytic " << got[i] << ", numeric " << want[i]
                                           << " (atol " << atol << ", rtol " << rtol << ")";
  return ::testing::AssertionSuccess();
}

inline double dot(const std::vector<double>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace forge::testing
