// Neural-network ops: activations and their gradients, layer norm, softmax
// gradient, reductions, dropout and the AdamW update (see forge/ops.h for the
// conventions every op follows). Every forward that training needs has an
// explicit backward twin named `<op>_bwd`. All tensors are f32 and on one
// device; "[.., C]" means any number of leading dims (rank 1..8).
#pragma once
#include <cstdint>

#include "forge/ops/core.h"

namespace forge {

// ---- Elementwise ---------------------------------------------------------

// a * b and a - b; shapes must match exactly.
Tensor mul(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);

// ---- Activations ---------------------------------------------------------
// x [..] -> y [..]; the backwards take the forward's input x and the output
// gradient dy [..] (same shape) and return dx [..].

// GELU, tanh approximation (GPT-2):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor& x);
// dx = gelu'(x) * dy.
Tensor gelu_bwd(const Tensor& x, const Tensor& dy);
// max(x, 0).
Tensor relu(const Tensor& x);
// dx = dy where x > 0, else 0.
Tensor relu_bwd(const Tensor& x, const Tensor& dy);
// SiLU (swish): x * sigmoid(x).
Tensor silu(const Tensor& x);
// dx = sigmoid(x) (1 + x (1 - sigmoid(x))) * dy.
Tensor silu_bwd(const Tensor& x, const Tensor& dy);

// ---- Layer norm ----------------------------------------------------------

// x [.., C], gamma [C], beta [C] -> y [.., C]: each row normalised over C by
// its mean and biased variance (as torch.nn.LayerNorm),
// y = (x - mean) / sqrt(var + eps) * gamma + beta.
Tensor layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps = 1e-5f);

struct LayerNormGrads {
  Tensor dx;      // [.., C]
  Tensor dgamma;  // [C], summed over all leading dims
  Tensor dbeta;   // [C], summed over all leading dims
};
// Gradients of layernorm from its input x [.., C], gamma [C] and the output
// gradient dy [.., C] (mean and variance are recomputed from x). With
// dx_add (x's shape) dx is dx_add + the norm's input gradient, as add would
// give it: a residual stream's gradient joining the norm's, in one pass.
LayerNormGrads layernorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& dy, float eps = 1e-5f,
                             const Tensor* dx_add = nullptr);

// ---- Softmax gradient ----------------------------------------------------

// From the forward's output y [.., N] and dy [.., N]: per row,
// dx = y * (dy - sum(y * dy)). Entries a causal softmax masked are exact
// zeros in y, so their dx is zero without any mask here; given the
// forward's options (`mask`), a causal row reads only its visible part of y
// and dy (dy past it may hold anything) and writes zeros past it.
Tensor softmax_bwd(const Tensor& y, const Tensor& dy, const SoftmaxOptions& mask = {});

// ---- Reductions ----------------------------------------------------------

// x [.., C] -> [C]: sums over all leading dims (bias gradients). A rank-1 x
// is returned summed over nothing (a copy).
Tensor sum_rows(const Tensor& x);
// Sum of squares of all elements of x (any shape), read back to the host.
// A sync point on WebGPU.
float sumsq(const Tensor& x);
// Sum of squares of all elements of x as a [1] tensor on x's device (no
// read back: for gradient-norm clipping inside a training step).
Tensor sumsq_tensor(const Tensor& x);

// ---- Dropout -------------------------------------------------------------

// Inverted dropout: y[i] = keep(i) ? x[i] * scale : 0 with
// scale = f32(1 / (1 - p)) computed in double on the host. p must lie in
// [0, 1) (else ValueError); p = 0 returns x itself.
//
// Element i (its flat row-major index within x, 0 .. numel-1) is kept when
// r(i) >= threshold, with threshold = min(floor(p * 2^32), 2^32 - 1) and
// r(i) word 0 of Philox4x32-10 with counter (i mod 2^32, i div 2^32, 0, 0)
// and key (seed mod 2^32, seed div 2^32). The mask is a pure function of
// (p, seed, shape): bit-identical on every backend and however the work is
// split.
//
// The backward pass is the same call on the output gradient:
// dx = dropout(dy, p, seed) with the forward's p and seed.
Tensor dropout(const Tensor& x, float p, uint64_t seed);

// ---- Optimizer -----------------------------------------------------------

// One AdamW step (torch.optim.AdamW, decoupled weight decay) updating param,
// m and v IN PLACE (their storage; all [..] of one shape, grad too). step is
// the 1-based step count used for bias correction:
//   param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * grad
//   v = beta2 * v + (1 - beta2) * grad * grad
//   denom = sqrt(v) / sqrt(1 - beta2^step) + eps
//   param -= lr / (1 - beta1^step) * m / denom
// The scalar factors are computed in double on the host and applied in f32.
// ValueError when step < 1, a beta outside [0, 1), or lr, eps or
// weight_decay negative.
void adamw(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, double lr, double beta1, double beta2,
           double eps, double weight_decay, int64_t step);

}  // namespace forge
