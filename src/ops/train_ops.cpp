// The training utilities: validation, composition of existing ops where one
// fits (adamw, sub, softmax + gather_nll / ce_bwd, sumsq_tensor) and dispatch
// of the in-place elementwise kernels.
#include <cstring>

#include "cpu/train_kernels.h"
#include "gpu/runtime.h"
#include "ops/check.h"
#include "webgpu/nn_kernels.h"
#include "webgpu/train_kernels.h"

namespace forge {

namespace {

void check_pair(const char* op, const char* an, const Tensor& a, const char* bn, const Tensor& b) {
  check::same_device(op, {&a, &b});
  check::dtype(op, an, a, DType::F32);
  check::dtype(op, bn, b, DType::F32);
  if (a.shape() != b.shape())
    throw ShapeError(std::string("[") + op + "] shapes differ: " + check::operands({{an, &a}, {bn, &b}}));
}

// logits as [R, V] and targets as [R], checked under `op`'s name.
std::pair<Tensor, Tensor> ce_rows(const char* op, const Tensor& logits, const Tensor& targets) {
  check::same_device(op, {&logits, &targets});
  check::dtype(op, "logits", logits, DType::F32);
  check::rank(op, "logits", logits, 1, 2);
  if (targets.dtype() != DType::U32 && targets.dtype() != DType::I32)
    throw DTypeError(std::string("[") + op + "] targets must be u32 or i32, got " + targets.describe());
  int64_t rows = logits.rank() == 2 ? logits.dim(0) : 1;
  if (targets.rank() > 1 || targets.numel() != rows)
    throw ShapeError(std::string("[") + op + "] targets must be [" + std::to_string(rows) +
                     "] (one per row of logits): " + check::operands({{"logits", &logits}, {"targets", &targets}}));
  return {logits.reshape({rows, logits.dim(-1)}), targets.reshape({rows})};
}

}  // namespace

void sgd_update(Tensor& w, const Tensor& g, float lr) {
  check_pair("sgd_update", "w", w, "g", g);
  if (w.numel() == 0) return;
  if (w.device().is_cpu()) cpu::axpy_inplace(w, g, -lr);
  else webgpu::axpy_inplace(w, g, -lr);
}

void adamw_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const AdamParams& p) {
  adamw(w, g, m, v, p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.step);
}

Tensor mse_loss(const Tensor& pred, const Tensor& target) {
  check_pair("mse_loss", "pred", pred, "target", target);
  Tensor out = Tensor::empty(pred.shape(), DType::F32, pred.device());
  if (out.numel() == 0) return out;
  if (pred.device().is_cpu()) cpu::mse(pred, target, out);
  else webgpu::mse(pred, target, out);
  return out;
}

Tensor mse_loss_backward(const Tensor& pred, const Tensor& target) {
  check_pair("mse_loss_backward", "pred", pred, "target", target);
  return sub(pred, target);
}

Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets) {
  auto [l, t] = ce_rows("cross_entropy_loss", logits, targets);
  return gather_nll(softmax(l), t);
}

Tensor cross_entropy_loss_backward(const Tensor& logits, const Tensor& targets, float scale) {
  auto [l, t] = ce_rows("cross_entropy_loss_backward", logits, targets);
  return ce_bwd(softmax(l), t, scale).reshape(logits.shape());
}

Tensor gradient_norm_squared(const std::vector<Tensor>& grads) {
  if (grads.empty()) throw ValueError("[gradient_norm_squared] no tensors");
  for (const Tensor& g : grads) {
    check::same_device("gradient_norm_squared", {&grads.front(), &g});
    check::dtype("gradient_norm_squared", "grad", g, DType::F32);
  }
  if (grads.front().device().is_webgpu()) {
    // One partial pass per tensor into shared partial sums, one final pass.
    Tensor out = Tensor::empty({1}, DType::F32, grads.front().device());
    webgpu::sumsq_many(grads, out);
    return out;
  }
  Tensor total;
  for (const Tensor& g : grads) {
    Tensor s = sumsq_tensor(g);
    total = total.defined() ? add(total, s) : s;
  }
  return total;
}

void clip_grad_by_norm(Tensor& grad, const Tensor& norm_sq, float max_norm) {
  const char* op = "clip_grad_by_norm";
  check::same_device(op, {&grad, &norm_sq});
  check::dtype(op, "grad", grad, DType::F32);
  check::dtype(op, "norm_sq", norm_sq, DType::F32);
  if (norm_sq.numel() != 1)
    throw ShapeError("[clip_grad_by_norm] norm_sq must hold one value, got " + norm_sq.describe());
  if (!(max_norm > 0.0f))
    throw ValueError("[clip_grad_by_norm] max_norm must be positive, got " + std::to_string(max_norm));
  if (grad.numel() == 0) return;
  if (grad.device().is_cpu()) cpu::clip_inplace(grad, norm_sq, max_norm);
  else webgpu::clip_inplace(grad, norm_sq, max_norm);
}

void gradient_accumulate(Tensor& acc, const Tensor& g) {
  check_pair("gradient_accumulate", "acc", acc, "g", g);
  if (acc.numel() == 0) return;
  if (acc.device().is_cpu()) cpu::axpy_inplace(acc, g, 1.0f);
  else webgpu::axpy_inplace(acc, g, 1.0f);
}

void clip_grad_by_norm(Tensor& grad, float scale) {
  if (!(scale >= 0.0f && scale <= 1.0f))
    throw ValueError("[clip_grad_by_norm] scale must be in [0, 1], got " + std::to_string(scale) + " for " +
                     grad.describe());
  check::dtype("clip_grad_by_norm", "grad", grad, DType::F32);
  gradient_scale(grad, scale);
}

void gradient_scale(Tensor& g, float s) {
  check::same_device("gradient_scale", {&g});
  check::dtype("gradient_scale", "g", g, DType::F32);
  if (g.numel() == 0) return;
  if (g.device().is_cpu()) cpu::scale_inplace(g, s);
  else webgpu::scale_inplace(g, s);
}

void copy_tensor(const Tensor& src, Tensor& dst, int64_t dst_offset) {
  const char* op = "copy_tensor";
  check::same_device(op, {&src, &dst});
  if (src.dtype() != dst.dtype())
    throw DTypeError("[copy_tensor] dtypes differ: " + check::operands({{"src", &src}, {"dst", &dst}}));
  if (dst_offset < 0 || dst_offset + src.numel() > dst.numel())
    throw ShapeError("[copy_tensor] " + std::to_string(src.numel()) + " elements at offset " +
                     std::to_string(dst_offset) + " do not fit: " + check::operands({{"src", &src}, {"dst", &dst}}));
  uint64_t bytes = src.nbytes(), off = uint64_t(dst_offset) * dtype_size(dst.dtype());
  if (bytes == 0) return;
  if (dst.device().is_cpu()) {
    std::memcpy(static_cast<char*>(dst.raw_data()) + off, src.raw_data(), bytes);
    return;
  }
  uint64_t dst_at = dst.byte_offset() + off;
  if (bytes % 4 || dst_at % 4 || src.byte_offset() % 4)
    throw DeviceError("[copy_tensor] WebGPU copies need 4-byte multiples: " + std::to_string(bytes) +
                      " bytes to byte offset " + std::to_string(dst_at) + " (" +
                      check::operands({{"src", &src}, {"dst", &dst}}) + ")");
  dst.device().runtime().copy(src.buffer(), src.byte_offset(), dst.buffer(), dst_at, bytes);
}

}  // namespace forge
