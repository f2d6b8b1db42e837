// The gather family: token and position embeddings (whole or row-chunked
// tables), the weight-tied LM head over a chunked table, the per-row loss and
// its gradient, the embedding gradient (scatter-add), the attention head
// reshapes with their backwards, and the KV-cache append. See forge/ops.h for
// the conventions every op follows.
//
// Token ids are u32 or i32 tensors. Where ids are on the CPU they are range
// checked (ValueError naming the op, the id and its row); ids on the CPU may be
// passed with tables on WebGPU and are then checked and uploaded. Ids that
// already live on a WebGPU device cannot be checked without a sync point, so
// kernels handle an out-of-range id without reading out of bounds: a gather
// writes NaN into that id's output row (embedding, gather_nll, ce_bwd), so the
// error shows in every result computed from it; scatter_add_rows skips it.
//
// On WebGPU the gathers, the LM head, the losses, scatter_add_rows, the head
// reshapes and kv_append split their work so that no storage binding exceeds
// the device's limit (wte, wpe, the logits, qkv and the KV cache may each be
// larger than one binding; the reshapes and kv_append copy in runs over the
// batch, else the heads, else the rows, and throw DeviceError only when one
// head row of hd floats does not fit a binding). The ids and the LM head's
// input `a` are bound whole and must each fit one binding.
#pragma once
#include <cstdint>
#include <vector>

#include "forge/ops/core.h"

namespace forge {

// ---- Embeddings ------------------------------------------------------------

// ids [T] or [B, T]; wte [V, C]; wpe [P, C] or nullptr (or an undefined
// tensor) for models without learned positions (Llama).
// -> [T, C] or [B, T, C]: out[b, t] = wte[ids[b, t]] + wpe[pos + t]. Each
// batch row starts at position `pos`. ValueError when pos + T > P or an id
// is >= V (see above for ids on the GPU).
Tensor embedding(const Tensor& ids, const Tensor& wte, const Tensor* wpe = nullptr, int64_t pos = 0);

// The same gather from a table stored as row chunks: chunks[i] holds table
// rows [i * chunk_rows, ...), each [chunk_rows, C] except the last
// ([1..chunk_rows, C]). Lets a table larger than the device's storage
// binding limit (GPT-2's wte is 147 MiB) stay on the GPU.
Tensor embedding_chunked(const Tensor& ids, const std::vector<Tensor>& chunks, int64_t chunk_rows,
                         const Tensor* wpe = nullptr, int64_t pos = 0);

// table [V, C] -> row chunks (views of table, or the whole table when it fits)
// such that each chunk fits one storage binding of `device` (a WebGPU device;
// the CPU has no limit and gets one chunk). A table on the CPU is split into
// views meant to be uploaded one by one (chunk.to(device)); a table on the
// device is split at rows meeting its storage offset alignment. All chunks
// but the last have the same number of rows (the chunk_rows of
// embedding_chunked).
std::vector<Tensor> split_rows_for_binding(const Tensor& table, const Device& device);

// ---- LM head -----------------------------------------------------------------

// a [m, k] or [.., k]; chunks[i] [n_i, k] (a row-chunked weight-tied wte)
// -> [m, sum n_i] (or [.., sum n_i]) = alpha * a @ concat(chunks)^T. On WebGPU
// the output is written in row blocks so no binding exceeds the limit. With
// `norm` a's rows are normed first (row_norm), in the same dispatches on
// WebGPU for few rows (a model's final norm before its LM head). With
// pad_rows each row is padded with zeros to whole vec4s: the result is [m,
// P] (or [.., P]), P = sum n_i rounded up to a multiple of 4 (a training
// step's logits, whose gradient the backward's products then read as vec4s).
Tensor matmul_chunked_transb(const Tensor& a, const std::vector<Tensor>& chunks, float alpha = 1.0f,
                             const RowNorm* norm = nullptr, bool pad_rows = false);
// The width of a row of n entries as pad_rows pads it: n rounded up to a
// multiple of 4.
int64_t padded_row_width(int64_t n);

struct ChunkedTransbGrads {
  Tensor da;                     // shaped as a
  std::vector<Tensor> dchunks;  // shaped as the chunks
};

// The gradients of matmul_chunked_transb(a, chunks, alpha) for an output
// gradient dout [m, sum n_i] (or [.., sum n_i]; or rows padded as pad_rows
// pads them, the padding ignored):
//   da = alpha * dout @ concat(chunks),  dchunks[i] = alpha * dout[:, block i]^T @ a
// where block i holds the columns of chunk i. On WebGPU dout and a are each
// bound whole (the chunks one at a time), so the tied LM head of a model
// whose token table is split across bindings trains in row blocks of dout.
// With dchunks_into (one tensor per chunk), a defined one takes dchunks[i]
// IN PLACE (MatmulOptions::out's conditions) and is returned as it; with
// accumulate, dchunks[i] is added into it (MatmulOptions::accumulate: a
// table's gradient summed over row blocks of dout).
ChunkedTransbGrads matmul_chunked_transb_backward(const Tensor& dout, const Tensor& a,
                                                  const std::vector<Tensor>& chunks, float alpha = 1.0f,
                                                  const std::vector<Tensor>* dchunks_into = nullptr,
                                                  bool accumulate = false);

// ---- Losses ------------------------------------------------------------------

// probs [R, V] or [B, T, V]; ids [R] or [B, T] -> [R] or [B, T]:
// out[r] = -log(probs[r, ids[r]]).
Tensor gather_nll(const Tensor& probs, const Tensor& ids);

// The gradient of scale * sum_r -log softmax(logits)[r, ids[r]] with respect
// to the logits, given probs = softmax(logits): probs [R, V] or [B, T, V];
// ids [R] or [B, T] -> [R, V] (probs' shape): (probs - onehot(ids)) * scale.
Tensor ce_bwd(const Tensor& probs, const Tensor& ids, float scale);

// The cross-entropy of each row and its gradient in one pass over the logits
// (a training step's LM head: no [R, V] probabilities beside them):
// logits [R, V] or [B, T, V] are overwritten IN PLACE with the gradient of
// scale * sum_r loss[r], (softmax(logits[r]) - onehot(ids[r])) * scale, and
// loss [R] or [B, T] is returned: logsumexp(logits[r]) - logits[r, ids[r]]
// of the logits as they were, finite for any margin (where gather_nll of the
// f32 probability gives +inf). ids as gather_nll's. With cols > 0 (at most
// V), only each row's first cols entries are its logits (rows padded as
// matmul_chunked_transb's pad_rows pads them): ids index those, and the
// entries past them are left as they are.
Tensor cross_entropy_in_place(Tensor& logits, const Tensor& ids, float scale, int64_t cols = 0);

// ---- Embedding gradient --------------------------------------------------------

// dst [V, C] (in place); ids [R] or [B, T]; src [R, C] or [B, T, C]:
// dst[ids[r]] += src[r] for r in order, so repeated ids accumulate and the
// result is deterministic (bitwise equal on CPU and WebGPU). The backward of
// embedding with respect to wte. ValueError for an id >= V on the CPU.
void scatter_add_rows(Tensor& dst, const Tensor& ids, const Tensor& src);

// ---- Attention heads -----------------------------------------------------------

struct QKV {
  Tensor q, k, v;  // each [h, T, hd] or [B, h, T, hd]
};

// qkv [T, 3C] or [B, T, 3C] (q, k, v side by side, heads contiguous within
// each) -> q, k, v each [h, T, C / h] or [B, h, T, C / h].
QKV split_heads(const Tensor& qkv, int64_t n_head);
// The backward of split_heads for one third: d [h, T, hd] or [B, h, T, hd]
// is the gradient of q (which = 0), k (1) or v (2) -> [T, 3C] or [B, T, 3C]
// with the other two thirds zero.
Tensor unsplit_head(const Tensor& d, int which);
// The full backward of split_heads: dq, dk, dv (same shapes) -> [T, 3C] or
// [B, T, 3C].
Tensor unsplit_heads(const Tensor& dq, const Tensor& dk, const Tensor& dv);
// x [h, T, hd] or [B, h, T, hd] -> [T, h * hd] or [B, T, h * hd].
Tensor merge_heads(const Tensor& x);
// The backward of merge_heads: dy [T, C] or [B, T, C] -> [h, T, C / h] or
// [B, h, T, C / h].
Tensor unmerge_heads(const Tensor& dy, int64_t n_head);

// x [.., sum widths] -> one tensor [.., widths[i]] per width, column blocks
// of x in order (a product over weights joined by rows, split per weight).
std::vector<Tensor> split_columns(const Tensor& x, const std::vector<int64_t>& widths);
// The inverse: parts [.., w_i] with the same leading dims -> [.., sum w_i].
Tensor concat_columns(const std::vector<Tensor>& parts);

// ---- KV cache --------------------------------------------------------------------

// cache [h, cap, hd] or [B, h, cap, hd] (in place); src [h, t, hd] or
// [B, h, t, hd]: cache[.., len + i, :] = src[.., i, :] for i < t. ValueError
// when len + t > cap.
void kv_append(Tensor& cache, const Tensor& src, int64_t len);
// The token-major form: cache [B, cap, ..] (in place), src [B, t, ..] with
// the cache's trailing dims: cache[b, at + i, ..] = src[b, i, ..] for i < t.
// ValueError when at + t > cap.
void kv_append_tokens(Tensor& cache, const Tensor& src, int64_t at);
// Rows at their own positions (continuous batching): cache [B, cap, ..]
// token-major (in place); src [n, t, ..] with the cache's trailing dims:
// cache[row0 + i, at[i] + j, ..] = src[i, j, ..] for i < n, j < t. ValueError
// when a row lies outside the cache or at[i] + t > cap.
void kv_append_rows(Tensor& cache, const Tensor& src, int64_t row0, const std::vector<int64_t>& at);

}  // namespace forge
