// add, scale: validation and dispatch.
#include "cpu/kernels.h"
#include "ops/check.h"
#include "webgpu/kernels.h"

namespace forge {

Tensor add(const Tensor& a, const Tensor& b) {
  check::same_device("add", {&a, &b});
  check::dtype("add", "a", a, DType::F32);
  check::dtype("add", "b", b, DType::F32);
  check::same_shape("add", a, b);
  Tensor out = Tensor::empty(a.shape(), DType::F32, a.device());
  if (a.device().is_cpu()) cpu::add(a, b, out);
  else webgpu::add(a, b, out);
  return out;
}

Tensor scale(const Tensor& x, float alpha) {
  check::same_device("scale", {&x});
  check::dtype("scale", "x", x, DType::F32);
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.device().is_cpu()) cpu::scale(x, alpha, out);
  else webgpu::scale(x, alpha, out);
  return out;
}

}  // namespace forge
