// mul, sub and the activations with their backwards. The activations are
// evaluated in double and rounded once, which makes them the reference the
// WebGPU kernels are compared against; their exp is vm::exp, so the loops
// vectorize.
#include <algorithm>

#include "cpu/isa_clones.h"
#include "cpu/nn_kernels.h"
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

template <class F>
void map1(const Tensor& x, Tensor& y, F f) {
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = f(px[i]);
}

template <class F>
void map2(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  for (int64_t i = 0, n = a.numel(); i < n; ++i) po[i] = f(pa[i], pb[i]);
}

}  // namespace

void mul(const Tensor& a, const Tensor& b, Tensor& out) {
  map2(a, b, out, [](float u, float w) { return u * w; });
}

void sub(const Tensor& a, const Tensor& b, Tensor& out) {
  map2(a, b, out, [](float u, float w) { return u - w; });
}

FORGE_ISA_CLONES void activation(Activation act, const Tensor& x, Tensor& y) {
  switch (act) {
    case Activation::Gelu: map1(x, y, [](float v) { return float(gelu_fwd(v)); }); break;
    case Activation::Relu: map1(x, y, [](float v) { return v > 0.0f ? v : 0.0f; }); break;
    case Activation::Silu: map1(x, y, [](float v) { return float(v * vm::sigmoid(v)); }); break;
  }
}

FORGE_ISA_CLONES void activation_bwd(Activation act, const Tensor& x, const Tensor& dy, Tensor& dx) {
  switch (act) {
    case Activation::Gelu:
      map2(x, dy, dx, [](float v, float g) { return float(gelu_grad(v) * g); });
      break;
    case Activation::Relu: map2(x, dy, dx, [](float v, float g) { return v > 0.0f ? g : 0.0f; }); break;
    case Activation::Silu:
      map2(x, dy, dx, [](float v, float g) {
        double s = vm::sigmoid(v);
        return float(s * (1.0 + v * (1.0 - s)) * g);
      });
      break;
  }
}

}  // namespace forge::cpu
