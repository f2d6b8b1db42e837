// mul, sub and the activations with their backwards. The activations are
// evaluated in double and rounded once, which makes them the reference the
// WebGPU kernels are compared against; their exp is vm::exp, so the loops
// vectorize.
#include <algorithm>

#include "cpu/isa_clones.h"
#include "cpu/nn_kernels.h"
#include "cpu/parallel.h"
#include "cpu/vec_math.h"

namespace forge::cpu {

namespace {

constexpr double kGeluK = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

// GELU (tanh form) as x * s with s = sigmoid(2u) = (1 + tanh u) / 2 and
// u = kGeluK (x + kGeluC x^3). The identity is exact; unlike 1 + tanh u it
// does not cancel where tanh u -> -1, so the result is correctly rounded to
// float for negative x too.
struct GeluTerms {
  double s;            // sigmoid(2u)
  double one_minus_s;  // 1 - s, without cancellation
};

GeluTerms gelu_terms(double x) {
  const double u = kGeluK * (x + kGeluC * x * x * x);
  // Capped so that e * s below stays finite (s is then far below float range).
  const double e = vm::exp(std::min(-2.0 * u, 700.0));
  const double s = 1.0 / (1.0 + e);
  return {s, e * s};
}

double gelu_fwd(double x) { return x * gelu_terms(x).s; }

// d/dx x s(2u) = s + x s (1 - s) 2u'.
double gelu_grad(double x) {
  const GeluTerms g = gelu_terms(x);
  return g.s + 2.0 * kGeluK * x * (1.0 + 3.0 * kGeluC * x * x) * g.s * g.one_minus_s;
}

// out = f(a, b) elementwise, memory-bound: spread over the threads as is.
template <class F>
void map2(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  parallel_for(a.numel(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = f(pa[i], pb[i]);
  });
}

// Rough cost of one activation element relative to a load and a store:
// the exp's polynomial and a division.
constexpr int64_t kActivationCost = 32;

// y[i] = act(x[i]) for i in [lo, hi).
FORGE_ISA_CLONES void activation_range(Activation act, const float* x, float* y, int64_t lo, int64_t hi) {
  switch (act) {
    case Activation::Gelu:
      for (int64_t i = lo; i < hi; ++i) y[i] = float(gelu_fwd(x[i]));
      break;
    case Activation::Relu:
      for (int64_t i = lo; i < hi; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      break;
    case Activation::Silu:
      for (int64_t i = lo; i < hi; ++i) y[i] = float(x[i] * vm::sigmoid(x[i]));
      break;
  }
}

// dx[i] = act'(x[i]) dy[i] for i in [lo, hi).
FORGE_ISA_CLONES void activation_bwd_range(Activation act, const float* x, const float* dy, float* dx, int64_t lo,
                                           int64_t hi) {
  switch (act) {
    case Activation::Gelu:
      for (int64_t i = lo; i < hi; ++i) dx[i] = float(gelu_grad(x[i]) * dy[i]);
      break;
    case Activation::Relu:
      for (int64_t i = lo; i < hi; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
      break;
    case Activation::Silu:
      for (int64_t i = lo; i < hi; ++i) {
        const double v = x[i], s = vm::sigmoid(v);
        dx[i] = float(s * (1.0 + v * (1.0 - s)) * dy[i]);
      }
      break;
  }
}

}  // namespace

void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  map2(a, b, out, [](float u, float w) { return u * w; });
}

void sub(const Tensor& a, const Tensor& b, Tensor& out) {
  map2(a, b, out, [](float u, float w) { return u - w; });
}

void activation(Activation act, const Tensor& x, Tensor& y) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(x.numel(), kActivationCost, [&](int64_t lo, int64_t hi) { activation_range(act, px, py, lo, hi); });
}

void activation_bwd(Activation act, const Tensor& x, const Tensor& dy, Tensor& dx) {
  const float* px = x.data<float>();
  const float* pdy = dy.data<float>();
  float* pdx = dx.data<float>();
  parallel_for(x.numel(), kActivationCost,
               [&](int64_t lo, int64_t hi) { activation_bwd_range(act, px, pdy, pdx, lo, hi); });
}

}  // namespace forge::cpu
