// softmax, softmax_bwd: validation and dispatch.
#include "cpu/kernels.h"
#include "ops/check.h"
#include "webgpu/kernels.h"

namespace forge {

namespace {

// The rows of x [.., N] and the causal mask of `o`.
SoftmaxPlan softmax_plan(const char* op, const Tensor& x, const SoftmaxOptions& o) {
  SoftmaxPlan p;
  p.cols = x.dim(-1);
  p.rows = p.cols ? x.numel() / p.cols : 0;
  p.causal = o.causal;
  p.q_len = o.q_len ? o.q_len : (x.rank() >= 2 ? x.dim(-2) : 1);
  p.key_offset = o.key_offset;
  if (p.q_len <= 0 || o.key_offset < 0)
    throw ValueError(std::string("[") + op + "] q_len must be positive and key_offset non-negative, got q_len " +
                     std::to_string(p.q_len) + ", key_offset " + std::to_string(o.key_offset) + " for " +
                     x.describe());
  return p;
}

}  // namespace

Tensor softmax(const Tensor& x, const SoftmaxOptions& o) {
  const char* op = "softmax";
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  check::rank(op, "x", x, 1, 8);
  const SoftmaxPlan p = softmax_plan(op, x, o);
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.device().is_cpu()) cpu::softmax(x, p, out);
  else webgpu::softmax(x, p, out);
  return out;
}

Tensor softmax_bwd(const Tensor& y, const Tensor& dy, const SoftmaxOptions& o) {
  const char* op = "softmax_bwd";
  check::same_device(op, {&y, &dy});
  check::dtype(op, "y", y, DType::F32);
  check::rank(op, "y", y, 1, 8);
  check::dtype(op, "dy", dy, DType::F32);
  if (dy.shape() != y.shape())
    throw ShapeError(std::string("[") + op + "] shapes differ: " + check::operands({{"y", &y}, {"dy", &dy}}));
  const SoftmaxPlan p = softmax_plan(op, y, o);
  Tensor dx = Tensor::empty(y.shape(), DType::F32, y.device());
  if (p.rows == 0) return dx;
  if (y.device().is_cpu()) cpu::softmax_bwd(y, dy, p, dx);
  else webgpu::softmax_bwd(y, dy, p, dx);
  return dx;
}

}  // namespace forge
