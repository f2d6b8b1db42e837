// softmax: validation and dispatch.
#include "cpu/kernels.h"
#include "ops/check.h"
#include "webgpu/kernels.h"

namespace forge {

Tensor softmax(const Tensor& x, const SoftmaxOptions& o) {
  const char* op = "softmax";
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  check::rank(op, "x", x, 1, 8);
  SoftmaxPlan p;
  p.cols = x.dim(-1);
  p.rows = p.cols ? x.numel() / p.cols : 0;
  p.causal = o.causal;
  p.q_len = o.q_len ? o.q_len : (x.rank() >= 2 ? x.dim(-2) : 1);
  p.key_offset = o.key_offset;
  if (p.q_len <= 0 || o.key_offset < 0)
    throw ValueError("[softmax] q_len must be positive and key_offset non-negative, got q_len " +
                     std::to_string(p.q_len) + ", key_offset " + std::to_string(o.key_offset) + " for " +
                     x.describe());
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.device().is_cpu()) cpu::softmax(x, p, out);
  else webgpu::softmax(x, p, out);
  return out;
}

}  // namespace forge
