// Training utilities: optimizer steps, losses and their gradients, gradient
// clipping and accumulation, and copies into a larger tensor (see
// forge/ops.h for the conventions every op follows). Ops that update a tensor
// IN PLACE write its storage (views included) and say so; all f32.
#pragma once
#include <cstdint>
#include <vector>

#include "forge/ops/gather.h"
#include "forge/ops/nn.h"

namespace forge {

// ---- Optimizers ----------------------------------------------------------------

// w -= lr * g, IN PLACE (w, g one shape), as w + f32(-lr) * g in f32.
void sgd_update(Tensor& w, const Tensor& g, float lr);

struct AdamParams {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  int64_t step = 1;  // 1-based
};
// adamw() of nn.h with its scalars in one struct: w, m, v updated IN PLACE.
void adamw_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const AdamParams& p);

// AdamW over a flat buffer holding many parameters, in one dispatch per
// binding-limit chunk: w, g, m, v f32 [n] (one layout), w, m, v updated IN
// PLACE. segments u32 [S, 3], rows (begin, end, decay): the parameters'
// element ranges, sorted and disjoint within [0, n). Elements of a segment
// get adamw()'s update with p's scalars, weight decay only where decay = 1
// (p.weight_decay, else none); elements outside every segment (padding,
// bytes of frozen tensors) are left alone. With max_norm > 0 the gradient is
// first scaled by clip_grad_by_norm's factor min(1, max_norm / (sqrt(
// norm_sq[0]) + 1e-6)), norm_sq f32 [1] on the device read by the kernel (no
// sync point); g itself is not changed. ShapeError / ValueError for bad
// operands (segments are checked on the CPU; on WebGPU the kernel never
// leaves [0, n)).
void adamw_flat(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const Tensor& segments, const AdamParams& p,
                const Tensor& norm_sq = Tensor(), float max_norm = 0.0f);

// ---- Losses ------------------------------------------------------------------------

// pred, target [..] -> [..]: 0.5 * (pred - target)^2, unreduced.
Tensor mse_loss(const Tensor& pred, const Tensor& target);
// pred, target [..] -> [..]: pred - target (the gradient of mse_loss's sum).
Tensor mse_loss_backward(const Tensor& pred, const Tensor& target);

// logits [R, V] or [V]; targets u32/i32 [R] (or [1] for a vector) -> [R]:
// -log(softmax(logits[r])[targets[r]]), unreduced. Composed of softmax() and
// gather_nll(): the probability is rounded to f32 before the log, so a row
// whose target probability underflows (a margin beyond ~87) gives +inf.
Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets);
// The gradient of scale * sum_r cross_entropy_loss(logits, targets)[r] with
// respect to the logits: (softmax(logits) - onehot(targets)) * scale, the
// logits' shape (ce_bwd of gather.h on the softmax).
Tensor cross_entropy_loss_backward(const Tensor& logits, const Tensor& targets, float scale = 1.0f);

// ---- Gradients -------------------------------------------------------------------

// sum of squares of every element of every tensor -> f32 [1] on their device
// (sumsq_tensor per tensor, added in order; no read back).
Tensor gradient_norm_squared(const std::vector<Tensor>& grads);
// grad *= min(1, max_norm / (sqrt(norm_sq[0]) + 1e-6)), IN PLACE
// (torch.nn.utils.clip_grad_norm_'s factor), with norm_sq f32 [1] on grad's
// device (gradient_norm_squared of all the gradients clipped together), read
// by the kernel: no sync point. max_norm > 0 (ValueError otherwise).
void clip_grad_by_norm(Tensor& grad, const Tensor& norm_sq, float max_norm);
// grad *= scale, IN PLACE, with a clip factor the caller computed from the
// global norm (min(1, max_norm / norm)): scale in [0, 1] (ValueError otherwise).
void clip_grad_by_norm(Tensor& grad, float scale);
// acc += g, IN PLACE (one shape).
void gradient_accumulate(Tensor& acc, const Tensor& g);
// g *= s, IN PLACE.
void gradient_scale(Tensor& g, float s);

// ---- Copies ------------------------------------------------------------------------

// dst.flat[dst_offset + i] = src.flat[i] for every element of src, IN PLACE
// in dst (same dtype and device, any shapes). ShapeError when it does not fit.
// On WebGPU the byte offset and size must be multiples of 4 (DeviceError).
void copy_tensor(const Tensor& src, Tensor& dst, int64_t dst_offset = 0);

}  // namespace forge
