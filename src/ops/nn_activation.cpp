// mul, sub and the activations (gelu, relu, silu) with their backwards:
// validation and dispatch.
#include "cpu/nn_kernels.h"
#include "ops/check.h"
#include "webgpu/nn_kernels.h"

namespace forge {

namespace {

void check_pair(const char* op, const char* na, const Tensor& a, const char* nb, const Tensor& b) {
  check::same_device(op, {&a, &b});
  check::dtype(op, na, a, DType::F32);
  check::dtype(op, nb, b, DType::F32);
  if (a.shape() != b.shape())
    throw ShapeError(std::string("[") + op + "] shapes differ: " + check::operands({{na, &a}, {nb, &b}}));
}

Tensor forward(const char* op, Activation act, const Tensor& x) {
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.device().is_cpu()) cpu::activation(act, x, y);
  else webgpu::activation(act, x, y);
  return y;
}

Tensor backward(const char* op, Activation act, const Tensor& x, const Tensor& dy) {
  check_pair(op, "x", x, "dy", dy);
  Tensor dx = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.device().is_cpu()) cpu::activation_bwd(act, x, dy, dx);
  else webgpu::activation_bwd(act, x, dy, dx);
  return dx;
}

}  // namespace

Tensor mul(const Tensor& a, const Tensor& b) {
  check_pair("mul", "a", a, "b", b);
  Tensor out = Tensor::empty(a.shape(), DType::F32, a.device());
  if (a.device().is_cpu()) cpu::mul(a, b, out);
  else webgpu::mul(a, b, out);
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  check_pair("sub", "a", a, "b", b);
  Tensor out = Tensor::empty(a.shape(), DType::F32, a.device());
  if (a.device().is_cpu()) cpu::sub(a, b, out);
  else webgpu::sub(a, b, out);
  return out;
}

Tensor gelu(const Tensor& x) { return forward("gelu", Activation::Gelu, x); }
Tensor gelu_bwd(const Tensor& x, const Tensor& dy) { return backward("gelu_bwd", Activation::Gelu, x, dy); }
Tensor relu(const Tensor& x) { return forward("relu", Activation::Relu, x); }
Tensor relu_bwd(const Tensor& x, const Tensor& dy) { return backward("relu_bwd", Activation::Relu, x, dy); }
Tensor silu(const Tensor& x) { return forward("silu", Activation::Silu, x); }
Tensor silu_bwd(const Tensor& x, const Tensor& dy) { return backward("silu_bwd", Activation::Silu, x, dy); }

}  // namespace forge
