// The GPT-2 forward pass: embeddings, pre-norm blocks (causal self-attention
// over a real batch axis, GELU MLP), ln_f and the tied LM head over wte's
// chunks; with and without a KV cache. The cache is token-major, [B,
// capacity, n_head, hd] per layer, as flash_attention_v2 reads it. A decode
// step (models::fused_rows) takes the fused kernels, six dispatches a layer:
// ln_1 + c_attn, qkv_append (split and cache append), flash attention, c_proj
// + residual, ln_2 + c_fc + gelu, mlp c_proj + residual. A prefill into an
// empty cache fills it with qkv_append and, on WebGPU, attends through flash
// attention; the forward without a cache keeps the separate ops (training
// attends through flash attention: models/gpt2/train_forward.cpp).
// A cached forward's last block takes each sequence's last position alone
// past its keys and values: the logits it returns are those positions'.
#include <cmath>

#include "forge/gpt2.h"
#include "forge/ops.h"
#include "models/common/cache.h"

namespace forge {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// Causal self-attention of q, k, v [B, nh, T, hd] (a prefill's first T
// positions), head-major as split_heads gives them -> [B * T, nh * hd]. The
// scores are computed only where a query sees a key (zeros elsewhere, which
// the softmax masks anyway): on the H200, GPT-2 124M's [12, 1023, 1023] took
// 77 against 86 us. The weighted sum stays whole: its 192 tiles of 64x64
// leave the GPU part idle, and over a triangle of A (the diagonal's tiles
// still summing all of k) it took 108 against 93 us.
Tensor attend_heads(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t B = q.dim(0), nh = q.dim(1), T = q.dim(2), hd = q.dim(3);
  MatmulOptions qk;
  qk.transpose_b = true;
  qk.alpha = float(1.0 / std::sqrt(double(hd)));
  qk.c_triangle = Triangle::Lower;
  Tensor att = matmul(q.reshape({B * nh, T, hd}), k.reshape({B * nh, T, hd}), qk);  // [B*nh, T, T]
  SoftmaxOptions so;
  so.causal = true;
  so.q_len = T;
  att = softmax(att, so);
  Tensor y = matmul(att, v.reshape({B * nh, T, hd})).reshape({B, nh, T, hd});
  return merge_heads(y).reshape({B * T, nh * hd});
}

}  // namespace

Tensor Gpt2::qkv_packed(int64_t l, const Tensor& x) const {
  const Gpt2Block& b = w_.h[size_t(l)];
  const int64_t B = x.dim(0), T = x.dim(1), C = config_.n_embd;
  Tensor h = layernorm(x, b.ln_1_w, b.ln_1_b, float(config_.layer_norm_epsilon)).reshape({B * T, C});
  return b.c_attn(h).reshape({B, T, 3 * C});
}

QKV Gpt2::block_in(int64_t l, const Tensor& x) const { return split_heads(qkv_packed(l, x), config_.n_head); }

Tensor Gpt2::block(int64_t l, const Tensor& x, Gpt2Cache* cache, bool last_only) const {
  const int64_t B = x.dim(0), T = x.dim(1), nh = config_.n_head, hd = config_.head_dim();
  if (!cache) {
    QKV qkv = block_in(l, x);  // each [B, nh, T, hd]
    return block_out(l, x, attend_heads(qkv.q, qkv.k, qkv.v));
  }
  if (models::fused_rows(B * T)) return decode_block(l, x, *cache);
  last_only = last_only && T > 1;
  Tensor q;  // [B, T, nh, hd]; k and v go into the cache at its length
  if (cache->len == 0) {
    // No earlier positions. qkv_append puts k and v from the packed
    // projection into the cache's first T slots (one dispatch on WebGPU) and
    // returns q; flash attention over them is one more (H200, 1024 tokens:
    // 9.65 against 10.0 ms for q, k and v split into heads, the products and
    // the heads merged back). The CPU's flash attention takes its products by
    // blocks through sgemm too, as fast as the split heads there: GPT-2 124M
    // prefill of 1024 tokens 1,097-1,202 tokens/s this way, 1,081-1,167 that
    // way, in alternating rounds.
    q = qkv_append(qkv_packed(l, x), cache->k[size_t(l)], cache->v[size_t(l)], 0);
  } else {
    QKV qkv = block_in(l, x);  // each [B, nh, T, hd]
    auto tokens = [&](const Tensor& t) { return merge_heads(t).reshape({B, T, nh, hd}); };
    kv_append_tokens(cache->k[size_t(l)], tokens(qkv.k), cache->len);
    kv_append_tokens(cache->v[size_t(l)], tokens(qkv.v), cache->len);
    q = tokens(qkv.q);
  }
  if (!last_only) return block_out(l, x, attend(l, q, *cache, cache->len));
  // Only each sequence's last position goes on: -> [B, 1, C].
  const Tensor y = attend(l, models::last_position_of(q), *cache, cache->len + T - 1);
  return block_out(l, models::last_position_of(x), y);
}

Tensor Gpt2::attend(int64_t l, const Tensor& q, const Gpt2Cache& cache, int64_t pos) const {
  const int64_t B = q.dim(0), T = q.dim(1);
  const Tensor& K = cache.k[size_t(l)];
  const Tensor& V = cache.v[size_t(l)];
  AttentionOptions o;
  o.causal = true;
  o.kv_offset = pos;
  const Tensor y = flash_attention_v2(q, models::first_positions(K, pos + T), models::first_positions(V, pos + T), o);
  return y.reshape({B * T, config_.n_embd});
}

Tensor Gpt2::decode_block(int64_t l, const Tensor& x, Gpt2Cache& cache) const {
  const Gpt2Block& b = w_.h[size_t(l)];
  const int64_t B = x.dim(0), T = x.dim(1), C = config_.n_embd;
  const float eps = float(config_.layer_norm_epsilon);
  const Tensor x0 = x.reshape({B * T, C});
  const RowNorm ln_1{&b.ln_1_w, eps, true, &b.ln_1_b}, ln_2{&b.ln_2_w, eps, true, &b.ln_2_b};
  // q [B, T, nh, hd]; k and v into the cache.
  const Tensor q = b.c_attn.qkv_append(x0, &ln_1, cache.k[size_t(l)], cache.v[size_t(l)], cache.len);
  const Tensor y = attend(l, q, cache, cache.len);  // [B * T, C]
  const Tensor x1 = b.attn_proj.residual(y, x0);  // x + c_proj(y)
  return b.mlp_proj.residual(b.fc(x1, &ln_2, /*gelu=*/true), x1).reshape({B, T, C});
}

Tensor Gpt2::block_out(int64_t l, const Tensor& x, const Tensor& y) const {
  const Gpt2Block& b = w_.h[size_t(l)];
  const int64_t B = x.dim(0), T = x.dim(1), C = config_.n_embd;
  const float eps = float(config_.layer_norm_epsilon);
  // The residual adds and the gelu in the products' stores where the kernels
  // take them (MatmulOptions); the same sums as the separate ops.
  const Tensor x1 = b.attn_proj.residual(y, x.reshape({B * T, C}));  // x + c_proj(y)
  const Tensor m = b.fc(layernorm(x1, b.ln_2_w, b.ln_2_b, eps), nullptr, /*gelu=*/true);
  return b.mlp_proj.residual(m, x1).reshape({B, T, C});
}

Tensor Gpt2::lm_head(const Tensor& x, bool fused) const {
  const int64_t C = config_.n_embd;
  const int64_t rows = x.numel() / C;
  Shape out = x.shape();
  out.back() = config_.vocab_size;
  const models::Linear& q = w_.wte_q;
  const RowNorm ln_f{&w_.ln_f_w, float(config_.layer_norm_epsilon), true, &w_.ln_f_b};
  if (fused && !q.quant) return matmul_chunked_transb(x.reshape({rows, C}), w_.wte, 1.0f, &ln_f).reshape(out);
  Tensor h = row_norm(x, ln_f).reshape({rows, C});
  // A vocabulary-sized table is not dequantized whole: the product reads the packed words.
  if (q.quant) return quantized_matmul(h, q.q, q.scales, q.biases, q.quant->bits, q.quant->group_size).reshape(out);
  return matmul_chunked_transb(h, w_.wte).reshape(out);
}

Tensor Gpt2::embed(const Tensor& ids, int64_t pos) const {
  if (!w_.wte_q.quant) return embedding_chunked(ids, w_.wte, w_.wte_chunk_rows, &w_.wpe, pos);
  const models::Linear& q = w_.wte_q;
  const int64_t B = ids.dim(0), T = ids.dim(1);
  std::vector<uint32_t> at(size_t(B * T));
  for (int64_t i = 0; i < B * T; ++i) at[size_t(i)] = uint32_t(pos + i % T);
  return add(affine_embedding(ids, q.q, q.scales, q.biases, q.quant->bits, q.quant->group_size),
             embedding(Tensor::from_vector(at, {B, T}), w_.wpe));
}

Tensor Gpt2::token_rows(const Tensor& ids) const {
  const models::Linear& q = w_.wte_q;
  if (q.quant) return affine_embedding(ids, q.q, q.scales, q.biases, q.quant->bits, q.quant->group_size);
  return embedding_chunked(ids, w_.wte, w_.wte_chunk_rows);
}

Tensor Gpt2::forward(const Tensor& ids_in, std::vector<Tensor>* hidden) const {
  Tensor ids = ids_as_batch(ids_in, "gpt2");
  const int64_t T = ids.dim(1);
  if (T < 1) throw ShapeError("[gpt2] ids " + ids.describe() + " hold no positions");
  if (T > config_.n_positions)
    throw ValueError("[gpt2] sequence of " + S(T) + " tokens exceeds the context length n_positions = " +
                     S(config_.n_positions));
  Tensor x = embed(ids, 0);  // [B, T, C]
  if (hidden) hidden->assign(1, x);
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    x = block(l, x, nullptr);
    if (hidden && l + 1 < config_.n_layer) hidden->push_back(x);
  }
  if (hidden) hidden->push_back(layernorm(x, w_.ln_f_w, w_.ln_f_b, float(config_.layer_norm_epsilon)));
  Tensor logits = lm_head(x);  // [B, T, V]
  return ids_in.rank() == 1 ? logits.reshape({T, config_.vocab_size}) : logits;
}

KvCache Gpt2::new_cache(int64_t batch, int64_t capacity) const {
  capacity = models::cache_capacity("gpt2", batch, capacity, config_.n_positions);
  return models::zero_cache(config_.n_layer, {batch, capacity, config_.n_head, config_.head_dim()}, batch, capacity,
                            device_);
}

Tensor Gpt2::forward_cached(const Tensor& ids_in, KvCache& cache) const {
  Tensor ids = ids_as_batch(ids_in, "gpt2");
  const int64_t B = ids.dim(0), T = ids.dim(1), C = config_.n_embd;
  if (cache.k.size() != size_t(config_.n_layer) || cache.k[0].dim(0) != B)
    throw ShapeError("[gpt2] cache does not match ids " + ids.describe() + " (make it with new_cache(" + S(B) + "))");
  if (T < 1) throw ShapeError("[gpt2] ids " + ids.describe() + " hold no positions");
  if (cache.len + T > config_.n_positions)
    throw ValueError("[gpt2] positions " + S(cache.len) + ".." + S(cache.len + T - 1) +
                     " exceed the context length n_positions = " + S(config_.n_positions));
  if (cache.len + T > cache.capacity)
    throw ValueError("[gpt2] positions " + S(cache.len) + ".." + S(cache.len + T - 1) + " exceed the cache capacity " +
                     S(cache.capacity));
  Tensor x = embed(ids, cache.len);  // [B, T, C]
  // The logits are the last positions' only: the last block takes only them
  // past its keys and values.
  for (int64_t l = 0; l < config_.n_layer; ++l) x = block(l, x, &cache, l + 1 == config_.n_layer);
  cache.len += T;
  const int64_t Tx = x.dim(1);  // T, or 1 after the last block's narrowing
  return lm_head(models::last_positions(x.reshape({B * Tx, C}), B, Tx), models::fused_rows(B * T));  // [B, V]
}

float Gpt2::loss(const Tensor& logits, const Tensor& ids) { return causal_lm_loss(logits, ids); }

}  // namespace forge
