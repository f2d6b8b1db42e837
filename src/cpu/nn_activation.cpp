// mul, sub and the activations with their backwards. The activations are
// evaluated in double and rounded once, which makes them the reference the
// WebGPU kernels are compared against.
#include <cmath>

#include "cpu/nn_kernels.h"

namespace forge::cpu {

namespace {

constexpr double kGeluK = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

double gelu_fwd(double x) { return 0.5 * x * (1.0 + std::tanh(kGeluK * (x + kGeluC * x * x * x))); }

double gelu_grad(double x) {
  double t = std::tanh(kGeluK * (x + kGeluC * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kGeluK * (1.0 + 3.0 * kGeluC * x * x);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

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

void activation(Activation act, const Tensor& x, Tensor& y) {
  switch (act) {
    case Activation::Gelu: map1(x, y, [](float v) { return float(gelu_fwd(v)); }); break;
    case Activation::Relu: map1(x, y, [](float v) { return v > 0.0f ? v : 0.0f; }); break;
    case Activation::Silu: map1(x, y, [](float v) { return float(v * sigmoid(v)); }); break;
  }
}

void activation_bwd(Activation act, const Tensor& x, const Tensor& dy, Tensor& dx) {
  switch (act) {
    case Activation::Gelu:
      map2(x, dy, dx, [](float v, float g) { return float(gelu_grad(v) * g); });
      break;
    case Activation::Relu: map2(x, dy, dx, [](float v, float g) { return v > 0.0f ? g : 0.0f; }); break;
    case Activation::Silu:
      map2(x, dy, dx, [](float v, float g) {
        double s = sigmoid(v);
        return float(s * (1.0 + v * (1.0 - s)) * g);
      });
      break;
  }
}

}  // namespace forge::cpu
