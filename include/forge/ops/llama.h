// The Llama op family: rotary position embeddings, RMS norm (plain and fused
// with the residual add), the SiLU-gated MLP product, the backwards of the
// elementwise ops, named matmul layouts, top-k indices and the depthwise
// convolution (see forge/ops.h for the conventions every op follows). All
// tensors are f32 and on one device unless stated.
#pragma once
#include <cstdint>
#include <vector>

#include "forge/ops/nn.h"

namespace forge {

// ---- Rotary position embedding -------------------------------------------

// Rotate-half RoPE (HF Llama), IN PLACE on x's storage. x is one token
// [hidden], a sequence [seq, hidden], a batch [batch, seq, hidden] or
// [batch, seq, heads, head_dim]; hidden = heads * head_dim. Every head vector
// of token s (0-based within its sequence) is rotated by the angles of
// position pos + s: for i < head_dim / 2, the pair (v[i], v[i + head_dim / 2])
// becomes (v[i] c - v[i + h] s, v[i + h] c + v[i] s) with c, s = cos, sin of
// angle(p, i) = f32(f32(p) * inv_freq[i]), inv_freq[i] = f32(theta^(-2i /
// head_dim)) computed in double (the f32 product mirrors HF, which forms the
// angle in f32). cos and sin of that angle are evaluated in double on the host
// and rounded to f32; both backends read the same [seq, head_dim / 2] table,
// so they differ at most by the rounding of the rotation itself.
// theta is the checkpoint's rope_theta (100000 for SmolLM2). head_dim must be
// even and divide hidden; pos >= 0. Head-major tensors (split_heads' layout)
// are the rank-3 case: [h, T, hd] is a batch of h sequences of hidden = hd
// (pass head_dim = hd); view [B, h, T, hd] as [B * h, T, hd].
void rope(Tensor& x, int64_t head_dim, int64_t pos, double theta = 10000.0);
// The backward of rope, IN PLACE: the inverse rotation (angle negated) applied
// to the output gradient gives the input gradient. Same arguments as rope.
void rope_backward(Tensor& dy, int64_t head_dim, int64_t pos, double theta = 10000.0);

// RoPE from precomputed frequencies (scaled ones: linear, llama3), so a model
// builds its table once per forward and every layer reuses it.
// inv_freq [head_dim / 2] of plain RoPE: f32(theta^(-2i / head_dim)) in double.
std::vector<float> rope_inv_freq(int64_t head_dim, double theta);
// The (cos, sin) table [seq, head_dim / 2, 2] of positions pos .. pos + seq - 1
// on `device`, built as rope() builds it.
Tensor rope_table(const std::vector<float>& inv_freq, int64_t pos, int64_t seq, const Device& device);
// rope / rope_backward with a table from rope_table (its seq >= x's sequence
// length; token s of each sequence uses row s).
void rope(Tensor& x, int64_t head_dim, const Tensor& table);
void rope_backward(Tensor& dy, int64_t head_dim, const Tensor& table);

// One attention step's rope and cache append in one pass (a decode step
// records one dispatch instead of four): q [B, T, nh, hd] and k [B, T, nkv,
// hd] rotated in place with `table` (as rope(x, hd, table)), then k and
// v [B, T, nkv, hd] copied into k_cache and v_cache [B, cap, nkv, hd] at
// positions at .. at + T - 1 (as kv_append over [B, 1, cap, nkv * hd]).
void rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                 int64_t at);
// rope_append of a joined q/k/v product (a prefill's one product over the
// three weights): qkv [B, T, (nh + 2 nkv) hd], q, k and v side by side ->
// q [B, T, nh, hd] rotated, k rotated and v appended to the caches [B, cap,
// nkv, hd] at `at`, in one dispatch on WebGPU (no split copies).
Tensor rope_append_packed(const Tensor& qkv, int64_t nh, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                          int64_t at);
// The rows form (continuous batching, as kv_append_rows): q [n, 1, nh, hd],
// k and v [n, 1, nkv, hd] hold one token of each of n rows, table [>= n,
// hd / 2, 2] row i's rotation (rope_table at row i's position) in its row
// i; row i's k and v go to row i of the caches [rows >= n, cap, nkv, hd] at
// slot at[i]. ValueError when `at` has another count than n or a slot lies
// outside [0, cap).
void rope_append_rows(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                      const std::vector<int64_t>& at);
// rope_append's form without a rotation for a packed projection (GPT-2's
// c_attn): qkv [B, T, 3C] (q, k, v side by side, C = nh * hd) -> q [B, T,
// nh, hd], with k and v copied into k_cache and v_cache [B, cap, nh, hd] at
// positions at .. at + T - 1. One dispatch on WebGPU (where the bindings
// allow; else split_heads, merge_heads and kv_append, as on the CPU).
// ValueError when at + T > cap.
Tensor qkv_append(const Tensor& qkv, Tensor& k_cache, Tensor& v_cache, int64_t at);
// The rows form: qkv [n, 1, 3C] (one token of each of n rows) -> q [n, 1, nh,
// hd], row i's k and v into row i of the caches [rows >= n, cap, nh, hd] at
// slot at[i]; one dispatch on WebGPU. Errors as rope_append_rows'.
Tensor qkv_append_rows(const Tensor& qkv, Tensor& k_cache, Tensor& v_cache, const std::vector<int64_t>& at);
// qkv_append of a product it computes: qkv = matmul(x, w, o) for x [B * T,
// k] and w [k, 3C] stored [k, n] (GPT-2's Conv1D), o giving a bias and a
// row norm only (ValueError otherwise), B the caches'. On WebGPU one token
// of one sequence is one dispatch: the product writes k and v straight
// into their cache slots (where the kernel applies; else the two ops).
Tensor qkv_append(const Tensor& x, const Tensor& w, const MatmulOptions& o, Tensor& k_cache, Tensor& v_cache,
                  int64_t at);

// ---- RMS norm ---------------------------------------------------------------

// x [.., C], weight [C] -> [.., C]: per row, y = x * r * weight with
// r = 1 / sqrt(mean(x^2) + eps) (HF LlamaRMSNorm; x * r is rounded before
// the weight multiplies it).
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps = 1e-5f);

struct RmsNormResidual {
  Tensor out;  // [.., C]: rms_norm(x + residual, weight, eps)
  Tensor sum;  // [.., C]: x + residual, the next residual stream
};
// The fused pre-norm of a Llama block: h = x + residual (f32, exactly as
// add()), out = rms_norm(h). Returns both, so one pass yields the normed
// input of the next sublayer and the residual stream after it.
RmsNormResidual rms_norm_residual(const Tensor& x, const Tensor& residual, const Tensor& weight,
                                  float eps = 1e-5f);

struct RmsNormGrads {
  Tensor dx;       // [.., C]
  Tensor dweight;  // [C], summed over all leading dims
};
// Gradients of rms_norm from its input x [.., C], weight [C] and the output
// gradient dy [.., C] (r is recomputed from x):
// dx = r * (dy w - xhat * mean(dy w xhat)), dweight = sum_rows(dy * xhat),
// xhat = x r. With dx_add (x's shape) dx is dx_add + that, as add would give
// it: a residual stream's gradient joining the norm's, in one pass.
RmsNormGrads rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, float eps = 1e-5f,
                          const Tensor* dx_add = nullptr);

// ---- Gated MLP --------------------------------------------------------------

// up, gate [..] (one shape) -> silu(up) * gate, in one pass.
// The HF Llama MLP is down_proj(silu(gate_proj(x)) * up_proj(x)), so the
// argument named `up` here receives gate_proj(x) (the projection that goes
// through SiLU) and `gate` receives up_proj(x):
//   h = silu_gate_fused(/*up=*/gate_proj(x), /*gate=*/up_proj(x)).
Tensor silu_gate_fused(const Tensor& up, const Tensor& gate);

// Decode-step fusions of a block's products (one dispatch on WebGPU where the
// plain ops take three; the plain ops elsewhere, with the same results up to
// the order of the f32 sums):
// x [.., K] times each of up to three weights W_i [n_i, K] (all f32 or all
// bf16): x @ W_i^T. With `norm`, x's rows are normed first (row_norm), in the
// same dispatch on WebGPU (a block's input norm: no separate norm dispatch).
// For many rows, weights that lie back to back in one storage
// (Tensor::joined_rows) take one product whose columns are then split (read
// in place by silu_gate_matmul, through silu_gate_packed).
std::vector<Tensor> matmul_transb_many(const Tensor& x, const std::vector<Tensor>& weights,
                                       const RowNorm* norm = nullptr);
// silu(x @ gate^T) * (x @ up^T) for x [.., K], gate and up [n, K]: what
// silu_gate_fused(gate_proj(x), up_proj(x)) gives; `norm` as above.
Tensor silu_gate_matmul(const Tensor& x, const Tensor& gate, const Tensor& up, const RowNorm* norm = nullptr);

struct SiluGateGrads {
  Tensor grad_up;    // dy * gate * silu'(up)
  Tensor grad_gate;  // dy * silu(up)
};
// The backward of silu_gate_fused from its inputs and the output gradient dy
// (all one shape).
SiluGateGrads silu_gate_fused_backward(const Tensor& up, const Tensor& gate, const Tensor& dy);

// silu_gate_fused over one joined product gu [.., 2n] = [gate_proj(x) |
// up_proj(x)] (x times a layer's gate and up weights joined by rows, as the
// models load them): silu(gu[.., :n]) * gu[.., n:] -> [.., n], read in place
// rather than split into two tensors first.
Tensor silu_gate_packed(const Tensor& gu);
// Its backward: the gradient of gu, [.., 2n] in gu's layout (the output
// gradient of the joined product), from gu and dy [.., n].
Tensor silu_gate_packed_backward(const Tensor& gu, const Tensor& dy);

// ---- Elementwise backwards (add, sub, mul live in core.h / nn.h) -------------

struct BinaryGrads {
  Tensor grad_a;
  Tensor grad_b;
};
// add(a, b): both gradients are `grad` itself (the same storage, no copy:
// clone one before updating it in place).
BinaryGrads add_backward(const Tensor& grad);
// sub(a, b): (grad, -grad); grad_a is `grad` itself, grad_b a new tensor.
BinaryGrads sub_backward(const Tensor& grad);
// mul(a, b): (grad * b, grad * a); all three one shape.
BinaryGrads mul_backward(const Tensor& grad, const Tensor& a, const Tensor& b);

// ---- Matmul layouts -----------------------------------------------------------
// Thin names over matmul() for the three layouts a training step needs; a and
// b as matmul() takes them (rank 2 or 3, a rank-2 operand broadcast).

// a [.., m, k] @ b [.., k, n] -> [.., m, n].
Tensor matmul_nn(const Tensor& a, const Tensor& b);
// a [.., m, k] @ b[.., n, k]^T -> [.., m, n] (a Linear's forward: x @ W^T).
Tensor matmul_nt(const Tensor& a, const Tensor& b);
// a[.., k, m]^T @ b [.., k, n] -> [.., m, n] (a Linear's weight gradient:
// dy^T @ x).
Tensor matmul_tn(const Tensor& a, const Tensor& b);

// ---- Top-k -------------------------------------------------------------------------

// x [n] or [B, n] -> u32 [k] or [B, k]: the indices of the k largest values of
// each row, largest first; equal values are ordered by lower index first.
// Values are compared by the total order of their f32 bit patterns: -0 ranks
// below +0 and a NaN with the sign bit clear ranks above +inf. ValueError
// unless 1 <= k <= n. The result is identical on every backend. On WebGPU
// each row is reduced by a workgroup with a radix select of the k-th largest
// key (4 passes of 8 bits), the winners are compacted in index order, then
// each winner finds its place by counting the winners that precede it (one
// invocation per winner: O(k) each).
Tensor top_k(const Tensor& x, int64_t k);

// ---- Depthwise convolution --------------------------------------------------

// x [dim, seq] or [batch, dim, seq], w [dim, 3], b [dim] -> x's shape:
// out[d, s] = b[d] + w[d, 0] x[d, s - 1] + w[d, 1] x[d, s] + w[d, 2] x[d, s + 1]
// (kernel 3, zero padding 1), summed in that order in f32.
Tensor conv1d_depthwise(const Tensor& x, const Tensor& w, const Tensor& b);

}  // namespace forge
