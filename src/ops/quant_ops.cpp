// dequantize, affine_dequantize, quantized_matmul: validation of the MLX
// affine layout and dispatch.
#include "cpu/quant_kernels.h"
#include "ops/check.h"
#include "ops/gather_ids.h"
#include "webgpu/quant_kernels.h"

namespace forge {

namespace {

QuantPlan quant_plan(const char* op, const Tensor& w, const Tensor& scales, const Tensor& biases, int bits,
                     int group_size) {
  auto shapes = [&] { return check::operands({{"w_packed", &w}, {"scales", &scales}, {"biases", &biases}}); };
  if (bits != 2 && bits != 4 && bits != 8)
    throw ValueError(std::string("[") + op + "] bits must be 2, 4 or 8, got " + std::to_string(bits));
  if (group_size != 32 && group_size != 64 && group_size != 128)
    throw ValueError(std::string("[") + op + "] group_size must be 32, 64 or 128, got " + std::to_string(group_size));
  check::dtype(op, "w_packed", w, DType::U32);
  check::rank(op, "w_packed", w, 2, 2);
  if (scales.dtype() != biases.dtype())
    throw DTypeError(std::string("[") + op + "] scales and biases dtypes differ: " + shapes());
  QuantPlan p;
  p.bits = bits;
  p.group_size = group_size;
  switch (scales.dtype()) {
    case DType::F32: p.scale_kind = ScaleKind::F32, p.scale_bytes = 4; break;
    case DType::BF16: p.scale_kind = ScaleKind::BF16, p.scale_bytes = 2; break;
    case DType::F16: p.scale_kind = ScaleKind::F16, p.scale_bytes = 2; break;
    default: throw DTypeError(std::string("[") + op + "] scales must be f32, bf16 or f16: " + shapes());
  }
  p.out = w.dim(0);
  p.words = w.dim(1);
  p.in = p.words * 32 / bits;
  p.groups = p.in / group_size;
  if (p.in % group_size != 0 || scales.shape() != Shape{p.out, p.groups} || biases.shape() != scales.shape())
    throw ShapeError(std::string("[") + op + "] w_packed [out, in * " + std::to_string(bits) +
                     " / 32] needs scales and biases [out, in / " + std::to_string(group_size) + "] with in % " +
                     std::to_string(group_size) + " == 0: " + shapes());
  return p;
}

}  // namespace

Tensor dequantize(const Tensor& bytes) {
  const char* op = "dequantize";
  check::same_device(op, {&bytes});
  check::dtype(op, "bytes", bytes, DType::U32);
  check::rank(op, "bytes", bytes, 1, 8);
  Shape shape = bytes.shape();
  shape.back() *= 4;
  Tensor out = Tensor::empty(shape, DType::F32, bytes.device());
  if (out.numel() == 0) return out;
  if (bytes.device().is_cpu()) cpu::dequantize_bytes(bytes, out);
  else webgpu::dequantize_bytes(bytes, out);
  return out;
}

Tensor affine_dequantize(const Tensor& w_packed, const Tensor& scales, const Tensor& biases, int bits,
                         int group_size) {
  const char* op = "affine_dequantize";
  check::same_device(op, {&w_packed, &scales, &biases});
  QuantPlan p = quant_plan(op, w_packed, scales, biases, bits, group_size);
  Tensor out = Tensor::empty({p.out, p.in}, DType::F32, w_packed.device());
  if (out.numel() == 0) return out;
  if (w_packed.device().is_cpu()) cpu::affine_dequantize(w_packed, scales, biases, p, out);
  else webgpu::affine_dequantize(w_packed, scales, biases, p, out);
  return out;
}

Tensor quantized_matmul(const Tensor& x, const Tensor& w_packed, const Tensor& scales, const Tensor& biases,
                        int bits, int group_size, const Tensor* bias) {
  const char* op = "quantized_matmul";
  check::same_device(op, {&x, &w_packed, &scales, &biases});
  if (bias) check::same_device(op, {&x, bias});
  QuantPlan p = quant_plan(op, w_packed, scales, biases, bits, group_size);
  check::dtype(op, "x", x, DType::F32);
  check::rank(op, "x", x, 1, 8);
  if (x.dim(-1) != p.in)
    throw ShapeError("[quantized_matmul] x's last dim must be in = " + std::to_string(p.in) + ": " +
                     check::operands({{"x", &x}, {"w_packed", &w_packed}}));
  if (bias) {
    check::dtype(op, "bias", *bias, DType::F32);
    if (bias->shape() != Shape{p.out})
      throw ShapeError("[quantized_matmul] bias must be [" + std::to_string(p.out) + "]: " +
                       check::operands({{"bias", bias}, {"w_packed", &w_packed}}));
  }
  Shape shape = x.shape();
  shape.back() = p.out;
  int64_t m = p.in ? x.numel() / p.in : 0;
  Tensor y = Tensor::zeros(shape, DType::F32, x.device());
  if (y.numel() == 0 || p.in == 0) return y;
  if (x.device().is_cpu()) cpu::quantized_matmul(x, w_packed, scales, biases, bias, p, m, y);
  else webgpu::quantized_matmul(x, w_packed, scales, biases, bias, p, m, y);
  return y;
}

Tensor affine_embedding(const Tensor& ids, const Tensor& w_packed, const Tensor& scales, const Tensor& biases,
                        int bits, int group_size) {
  const char* op = "affine_embedding";
  check::same_device(op, {&w_packed, &scales, &biases});
  QuantPlan p = quant_plan(op, w_packed, scales, biases, bits, group_size);
  gather::check_ids_dtype(op, ids);
  check::rank(op, "ids", ids, 1, 2);
  const Device& dev = w_packed.device();
  Tensor dev_ids = gather::ids_for(op, ids, p.out, dev);
  Shape shape = ids.shape();
  shape.push_back(p.in);
  Tensor out = Tensor::empty(shape, DType::F32, dev);
  if (out.numel() == 0) return out;
  if (dev.is_cpu()) cpu::affine_embedding(dev_ids, w_packed, scales, biases, p, out);
  else webgpu::affine_embedding(dev_ids, w_packed, scales, biases, p, out);
  return out;
}

}  // namespace forge
