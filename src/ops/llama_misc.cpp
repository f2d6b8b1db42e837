// silu_gate_fused, silu_gate_packed and their backwards, the elementwise
// backwards, the matmul layouts, top_k and conv1d_depthwise: validation and
// dispatch.
#include <utility>

#include "cpu/llama_kernels.h"
#include "ops/check.h"
#include "webgpu/llama_kernels.h"

namespace forge {

namespace {

void check_same(const char* op, std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  const Tensor* first = ts.begin()->second;
  for (auto& [name, t] : ts) {
    check::dtype(op, name, *t, DType::F32);
    if (t->shape() != first->shape())
      throw ShapeError(std::string("[") + op + "] shapes differ: " + check::operands(ts));
  }
}

}  // namespace

Tensor silu_gate_fused(const Tensor& up, const Tensor& gate) {
  const char* op = "silu_gate_fused";
  check::same_device(op, {&up, &gate});
  check_same(op, {{"up", &up}, {"gate", &gate}});
  Tensor out = Tensor::empty(up.shape(), DType::F32, up.device());
  if (out.numel() == 0) return out;
  if (up.device().is_cpu()) cpu::silu_gate(up, gate, out);
  else webgpu::silu_gate(up, gate, out);
  return out;
}

SiluGateGrads silu_gate_fused_backward(const Tensor& up, const Tensor& gate, const Tensor& dy) {
  const char* op = "silu_gate_fused_backward";
  check::same_device(op, {&up, &gate, &dy});
  check_same(op, {{"up", &up}, {"gate", &gate}, {"dy", &dy}});
  SiluGateGrads g;
  g.grad_up = Tensor::empty(up.shape(), DType::F32, up.device());
  g.grad_gate = Tensor::empty(up.shape(), DType::F32, up.device());
  if (up.numel() == 0) return g;
  if (up.device().is_cpu()) cpu::silu_gate_bwd(up, gate, dy, g.grad_up, g.grad_gate);
  else webgpu::silu_gate_bwd(up, gate, dy, g.grad_up, g.grad_gate);
  return g;
}

namespace {

// gu [.., 2n]: its rows and n.
std::pair<int64_t, int64_t> packed_halves(const char* op, const Tensor& gu) {
  check::dtype(op, "gu", gu, DType::F32);
  if (gu.rank() < 1 || gu.dim(-1) % 2 != 0)
    throw ShapeError(std::string("[") + op + "] gu " + gu.describe() +
                     " must have an even last dim (the gate and up halves)");
  const int64_t n = gu.dim(-1) / 2;
  return {n == 0 ? 0 : gu.numel() / (2 * n), n};
}

Shape half_shape(const Tensor& gu) {
  Shape s = gu.shape();
  s.back() /= 2;
  return s;
}

}  // namespace

Tensor silu_gate_packed(const Tensor& gu) {
  const char* op = "silu_gate_packed";
  check::same_device(op, {&gu});
  const auto [rows, n] = packed_halves(op, gu);
  Tensor out = Tensor::empty(half_shape(gu), DType::F32, gu.device());
  if (out.numel() == 0) return out;
  if (gu.device().is_cpu()) cpu::silu_gate_packed(gu, rows, n, out);
  else webgpu::silu_gate_packed(gu, rows, n, out);
  return out;
}

Tensor silu_gate_packed_backward(const Tensor& gu, const Tensor& dy) {
  const char* op = "silu_gate_packed_backward";
  check::same_device(op, {&gu, &dy});
  const auto [rows, n] = packed_halves(op, gu);
  check::dtype(op, "dy", dy, DType::F32);
  if (dy.shape() != half_shape(gu))
    throw ShapeError(std::string("[") + op + "] dy " + dy.describe() + " must be gu " + gu.describe() +
                     " with half its last dim");
  Tensor dgu = Tensor::empty(gu.shape(), DType::F32, gu.device());
  if (dy.numel() == 0) return dgu;
  if (gu.device().is_cpu()) cpu::silu_gate_packed_bwd(gu, dy, rows, n, dgu);
  else webgpu::silu_gate_packed_bwd(gu, dy, rows, n, dgu);
  return dgu;
}

BinaryGrads add_backward(const Tensor& grad) {
  check::same_device("add_backward", {&grad});
  check::dtype("add_backward", "grad", grad, DType::F32);
  return {grad, grad};
}

BinaryGrads sub_backward(const Tensor& grad) {
  check::same_device("sub_backward", {&grad});
  check::dtype("sub_backward", "grad", grad, DType::F32);
  return {grad, scale(grad, -1.0f)};
}

BinaryGrads mul_backward(const Tensor& grad, const Tensor& a, const Tensor& b) {
  const char* op = "mul_backward";
  check::same_device(op, {&grad, &a, &b});
  check_same(op, {{"grad", &grad}, {"a", &a}, {"b", &b}});
  return {mul(grad, b), mul(grad, a)};
}

Tensor matmul_nn(const Tensor& a, const Tensor& b) { return matmul(a, b); }

Tensor matmul_nt(const Tensor& a, const Tensor& b) {
  MatmulOptions o;
  o.transpose_b = true;
  return matmul(a, b, o);
}

Tensor matmul_tn(const Tensor& a, const Tensor& b) {
  MatmulOptions o;
  o.transpose_a = true;
  return matmul(a, b, o);
}

Tensor top_k(const Tensor& x, int64_t k) {
  const char* op = "top_k";
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  check::rank(op, "x", x, 1, 2);
  int64_t n = x.dim(-1), rows = x.rank() == 2 ? x.dim(0) : 1;
  if (k < 1 || k > n)
    throw ValueError("[top_k] k must be in [1, " + std::to_string(n) + "], got " + std::to_string(k) + " for x " +
                     x.describe());
  if (n > int64_t(UINT32_MAX))
    throw ShapeError("[top_k] rows longer than 2^32 - 1 values are not supported: x " + x.describe());
  Shape shape = x.rank() == 2 ? Shape{rows, k} : Shape{k};
  Tensor out = Tensor::empty(shape, DType::U32, x.device());
  if (rows == 0) return out;
  if (x.device().is_cpu()) cpu::top_k(x, rows, n, k, out);
  else webgpu::top_k(x, rows, n, k, out);
  return out;
}

Tensor conv1d_depthwise(const Tensor& x, const Tensor& w, const Tensor& b) {
  const char* op = "conv1d_depthwise";
  check::same_device(op, {&x, &w, &b});
  check::dtype(op, "x", x, DType::F32);
  check::dtype(op, "w", w, DType::F32);
  check::dtype(op, "b", b, DType::F32);
  check::rank(op, "x", x, 2, 3);
  Conv1dPlan p;
  p.dim = x.dim(-2);
  p.seq = x.dim(-1);
  p.rows = x.numel() / std::max<int64_t>(1, p.seq);
  if (x.rank() == 3) p.rows = x.dim(0) * p.dim;
  if (w.shape() != Shape{p.dim, 3} || b.shape() != Shape{p.dim})
    throw ShapeError("[conv1d_depthwise] w must be [" + std::to_string(p.dim) + ", 3] and b [" +
                     std::to_string(p.dim) + "]: " + check::operands({{"x", &x}, {"w", &w}, {"b", &b}}));
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  if (out.numel() == 0) return out;
  if (x.device().is_cpu()) cpu::conv1d_depthwise(x, w, b, p, out);
  else webgpu::conv1d_depthwise(x, w, b, p, out);
  return out;
}

}  // namespace forge
