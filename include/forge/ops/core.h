// The first ops: elementwise add and scale, matmul, softmax (see forge/ops.h
// for the conventions every op follows).
#pragma once
#include <cstdint>

#include "forge/tensor.h"

namespace forge {

// ---- Elementwise ---------------------------------------------------------

// a + b; shapes must match exactly.
Tensor add(const Tensor& a, const Tensor& b);
// x * alpha.
Tensor scale(const Tensor& x, float alpha);

// ---- Matmul --------------------------------------------------------------

// A row norm that a decode-step product applies to its input rows as it
// reads them: RMSNorm with `weight` [K] and eps (as rms_norm), or with
// `layer` LayerNorm, mean-centred, with an optional `bias` [K] (as
// layernorm; a bias takes layer). On WebGPU the matrix-vector kernels (few
// rows) fuse it, so a decode step needs no norm dispatch; elsewhere the op
// runs the norm first, with the same results up to the order of the f32 sums.
struct RowNorm {
  const Tensor* weight = nullptr;  // [K], f32
  float eps = 1e-5f;
  bool layer = false;              // LayerNorm (GPT-2) instead of RMSNorm
  const Tensor* bias = nullptr;    // [K], f32, or none (LayerNorm only)
};
// x [.., K] normed as `n` says (rms_norm(x, *n.weight, n.eps), or with
// n.layer layernorm(x, *n.weight, bias or zeros, n.eps)).
Tensor row_norm(const Tensor& x, const RowNorm& n);

// Which part of op(A) [m, k] a matmul reads (as BLAS's trmm does): all of
// it, or only its lower triangle (A[i, j] for j <= i) or its upper one
// (j >= i), the other side taken as zero. Causal attention's probabilities
// and their gradients are triangular: P @ V and dS @ K read P's and dS's
// lower triangle, dS^T @ Q and P^T @ dY their transposes' upper one; the
// product skips the zero half of k instead of summing it. Of C [m, n], the
// part a matmul computes; the rest is written as zero (causal attention's
// scores Q K^T and their gradient dY V^T are needed below the diagonal only).
enum class Triangle { Full, Lower, Upper };

struct MatmulOptions {
  bool transpose_a = false;  // A stored as [.., k, m]
  bool transpose_b = false;  // B stored as [.., n, k]
  Triangle a_triangle = Triangle::Full;  // of op(A), the logical [m, k]
  Triangle c_triangle = Triangle::Full;  // of each [m, n] result, bias included
  float alpha = 1.0f;        // out = alpha * A @ B (+ bias)
  const Tensor* bias = nullptr;  // [n], added after scaling
  // Use only the first b_rows rows of each batch element of B (B a view over
  // a larger preallocated buffer such as a KV cache); -1 = all rows.
  int64_t b_rows = -1;
  // Decode-step fusions (A rank 2 and not transposed): A's rows normed as
  // they are read, out = gelu(alpha * A @ B + bias) (gelu's tanh form, GPT-2's
  // MLP), and out = residual + the product (residual of out's shape: a
  // product that feeds a residual stream; after the gelu where both are
  // asked). Fused on WebGPU for few rows of one batch element; the plain ops
  // (the norm, gelu, add) otherwise.
  const RowNorm* norm = nullptr;
  bool gelu = false;
  const Tensor* residual = nullptr;
  // Write the product IN PLACE into *out (f32, the product's shape, on the
  // operands' device, its storage apart from theirs; a view into a larger
  // storage is fine, on WebGPU at the device's storage offset alignment)
  // instead of into a new tensor: a weight's gradient straight into the
  // optimizer's flat gradient pages. Not with norm, gelu or residual.
  Tensor* out = nullptr;
  // With out: *out += the product (BLAS's beta = 1) instead of *out = it, a
  // gradient summed over micro-batches or row blocks without a pass of its
  // own (in the tiled kernels' store on WebGPU). out + product, as
  // gradient_accumulate would round it.
  bool accumulate = false;
};

// A [m, k] or [batch, m, k], B [k, n] or [batch, k, n] (stored transposed
// when asked) -> [m, n] or [batch, m, n]. A rank-2 operand is broadcast across
// the other's batch. A is f32; B is f32 or bf16 (a dense weight kept in 16
// bits: its values widen exactly and the products are f32; few rows against
// B [n, k] with transpose_b read the 16-bit values directly). Returns the
// product (*options.out when given).
Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options = {});

// ---- bf16 ------------------------------------------------------------------

// x bf16 [..] -> f32 [..] (exact).
Tensor bf16_to_f32(const Tensor& x);

// ---- Softmax -------------------------------------------------------------

struct SoftmaxOptions {
  bool causal = false;
  // Rows per query block: row r holds query position r % q_len. 0 = the
  // second-to-last dim (or 1 for a vector).
  int64_t q_len = 0;
  // Key offset: query q sees key j only when j <= q + key_offset (a KV cache
  // holding key_offset earlier positions).
  int64_t key_offset = 0;
};

// Softmax over the last dim; masked entries are exact zeros.
Tensor softmax(const Tensor& x, const SoftmaxOptions& options = {});

}  // namespace forge
