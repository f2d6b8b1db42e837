// The Llama-family forward pass, with and without a KV cache. The cache holds
// each layer's keys and values as [B, capacity, nkv, hd] (token-major, as
// flash attention reads them); a model whose every layer has the same
// sliding window keeps only that many positions, in a ring.
#include "forge/ops.h"
#include "models/common/cache.h"
#include "models/llama/llama.h"

namespace forge::models {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

}  // namespace

int64_t LlamaModel::ring_window() const {
  if (c_.layer_window.empty()) return 0;
  for (int64_t w : c_.layer_window)
    if (w != c_.layer_window[0]) return 0;
  return c_.layer_window[0];
}

Tensor LlamaModel::attend(int64_t l, Tensor& q, Tensor& k, const Tensor& v, const Tensor& rope_tab,
                          KvCache* cache, bool last_only) const {
  const int64_t hd = c_.head_dim;
  // The queries that go on (each sequence's last with last_only), rotated, and the position of their first.
  auto queries = [&](int64_t pos) {
    if (!last_only || q.dim(1) == 1) return std::pair{q, pos};
    return std::pair{last_position_of(q), pos + q.dim(1) - 1};
  };
  AttentionOptions o;
  o.causal = true;
  o.window = c_.window(l);
  auto rope_qk = [&] {
    rope(q, hd, rope_tab);
    rope(k, hd, rope_tab);
  };
  if (!cache) {
    rope_qk();
    return flash_attention_v2(q, k, v, o);
  }
  const int64_t T = q.dim(1), len = cache->len;
  Tensor& K = cache->k[size_t(l)];
  Tensor& Vc = cache->v[size_t(l)];
  // A plain cache, or a ring not wrapped yet (its slots are positions).
  if (!cache->ring || len + T <= cache->capacity) {
    rope_append(q, k, v, rope_tab, K, Vc, len);
    return attend_appended(l, q, *cache, last_only);
  }
  // Ring of W = capacity slots, position p in slot p % W.
  const int64_t W = cache->capacity, B = q.dim(0);
  if (len == 0) {
    // A prefill longer than the window: attend over the new keys themselves,
    // then keep the last W positions, each in its slot.
    rope_qk();
    const auto [qs, pos] = queries(0);
    o.kv_offset = pos;
    Tensor out = flash_attention_v2(qs, k, v, o);
    std::vector<uint32_t> rows(static_cast<size_t>(B * W));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = T - W; p < T; ++p) rows[size_t(b * W + p % W)] = uint32_t(b * T + p);
    const int64_t D = k.dim(2) * k.dim(3);
    Tensor ids = Tensor::from_vector(rows, {B * W});
    kv_append_tokens(K, embedding(ids, k.reshape({B * T, D})).reshape(K.shape()), 0);
    kv_append_tokens(Vc, embedding(ids, v.reshape({B * T, D})).reshape(Vc.shape()), 0);
    return out;
  }
  // One new position (forward_cached feeds a wrapped ring one token at a
  // time): its slot is overwritten, and then every slot holds one of the W
  // positions it may see, so no mask is needed (order does not matter).
  if (T != 1) throw ValueError("[llama] internal: a wrapped ring cache takes one position at a time");
  rope_append(q, k, v, rope_tab, K, Vc, len % W);
  o.causal = false;
  o.window = 0;
  return flash_attention_v2(q, K, Vc, o);
}

Tensor LlamaModel::attend_appended(int64_t l, const Tensor& q, const KvCache& cache, bool last_only) const {
  const int64_t T = q.dim(1), len = cache.len;
  AttentionOptions o;
  o.causal = true;
  o.window = c_.window(l);
  o.kv_offset = len;
  Tensor qs = q;
  if (last_only && T > 1) {  // each sequence's last query only
    qs = last_position_of(q);
    o.kv_offset = len + T - 1;
  }
  return flash_attention_v2(qs, first_positions(cache.k[size_t(l)], len + T),
                            first_positions(cache.v[size_t(l)], len + T), o);
}

Tensor LlamaModel::norm_stream(Stream& s, const Tensor& weight) const {
  const float eps = float(c_.rms_norm_eps);
  if (!s.pending.defined()) return rms_norm(s.x, weight, eps);
  // The last layer's MLP output joins the stream in the same pass as the norm.
  RmsNormResidual r = rms_norm_residual(s.pending, s.x, weight, eps);
  s.x = r.sum;
  s.pending = Tensor();
  return r.out;
}

Tensor LlamaModel::stream_value(const Stream& s) { return s.pending.defined() ? add(s.x, s.pending) : s.x; }

LlamaModel::Qkv LlamaModel::project(int64_t l, Stream& s, bool packed_ok) const {
  const LlamaLayer& y = layers_[size_t(l)];
  const int64_t B = s.x.dim(0), T = s.x.dim(1), H = c_.hidden_size, hd = c_.head_dim;
  const int64_t nh = c_.num_attention_heads, nkv = c_.num_key_value_heads;
  const std::vector<const Linear*> ls{&y.q, &y.k, &y.v};
  const RowNorm n{&y.input_norm, float(c_.rms_norm_eps)};
  // A fused stream's plain Linears take the norm and the three products in
  // one dispatch (apply_all). Linears joined with biases (Qwen2) take the
  // norm, then one product that the cache append takes apart.
  const bool fused_joined_with_bias = s.fused && packed_ok && y.q.bias.defined() && joined_linears(ls);
  std::vector<Tensor> qkv;
  if (s.fused && !fused_joined_with_bias) {
    qkv = apply_all(ls, s.x.reshape({B * T, H}), &n);
  } else {
    const Tensor h = s.fused ? row_norm(s.x.reshape({B * T, H}), n) : norm_stream(s, y.input_norm).reshape({B * T, H});
    if (packed_ok)
      if (const Tensor joined = joined_product(ls, h); joined.defined())
        return {Tensor(), Tensor(), Tensor(), joined.reshape({B, T, (nh + 2 * nkv) * hd})};
    qkv = apply_all(ls, h);
  }
  return {qkv[0].reshape({B, T, nh, hd}), qkv[1].reshape({B, T, nkv, hd}), qkv[2].reshape({B, T, nkv, hd}), Tensor()};
}

void LlamaModel::finish(int64_t l, Stream& s, const Tensor& a) const {
  const LlamaLayer& y = layers_[size_t(l)];
  const int64_t B = s.x.dim(0), T = s.x.dim(1), H = c_.hidden_size;
  if (s.fused) {
    const Tensor x1 = y.o.residual(a, s.x.reshape({B * T, H}));  // x + o_proj(a)
    const RowNorm n{&y.post_norm, float(c_.rms_norm_eps)};
    s.x = y.down.residual(silu_gate_of(y.gate, y.up, x1, &n), x1).reshape({B, T, H});
    return;
  }
  RmsNormResidual r = rms_norm_residual(y.o(a).reshape({B, T, H}), s.x, y.post_norm, float(c_.rms_norm_eps));
  Tensor n = r.out.reshape({B * T, H});
  s.x = r.sum;                                                           // x1 = x + o_proj(a)
  s.pending = y.down(silu_gate_of(y.gate, y.up, n)).reshape({B, T, H});  // x' = x1 + pending
}

void LlamaModel::layer(int64_t l, Stream& s, const Tensor& rope_tab, KvCache* cache, bool last_only) const {
  const int64_t B = s.x.dim(0);
  last_only = last_only && cache && !s.fused && s.x.dim(1) > 1;
  // A plain cache (or a ring not wrapped yet) takes the joined q/k/v
  // product as it is: rotated and appended in one pass, no split copies.
  const bool plain = cache && (!cache->ring || cache->len + s.x.dim(1) <= cache->capacity);
  Qkv p = project(l, s, plain);  // folds pending into s.x
  Tensor a;
  if (p.packed.defined()) {
    const Tensor q = rope_append_packed(p.packed, c_.num_attention_heads, rope_tab, cache->k[size_t(l)],
                                        cache->v[size_t(l)], cache->len);
    a = attend_appended(l, q, *cache, last_only);
  } else {
    a = attend(l, p.q, p.k, p.v, rope_tab, cache, last_only);
  }
  if (last_only) s.x = last_position_of(s.x);
  finish(l, s, a.reshape({B * a.dim(1), c_.num_attention_heads * c_.head_dim}));
}


Tensor LlamaModel::logits(const Tensor& n) const { return tied_ ? embed_.project(n) : lm_head_.project(n); }

LlamaModel::Stream LlamaModel::last_rows(const Stream& s, int64_t B, int64_t T) {
  auto last = [&](const Tensor& t) { return t.defined() ? last_positions(t.reshape({B * T, t.dim(-1)}), B, T) : t; };
  return {last(s.x), last(s.pending), s.fused};
}

Tensor LlamaModel::head(Stream& s) const {
  if (!s.fused) return logits(norm_stream(s, norm_));
  const RowNorm n{&norm_, float(c_.rms_norm_eps)};
  return tied_ ? embed_.project(s.x, &n) : lm_head_.project(s.x, &n);
}

Tensor LlamaModel::forward(const Tensor& ids_in, std::vector<Tensor>* hidden) const {
  Tensor ids = ids_as_batch(ids_in, "llama");
  const int64_t B = ids.dim(0), T = ids.dim(1), H = c_.hidden_size, V = c_.vocab_size;
  if (T < 1) throw ShapeError("[llama] ids " + ids.describe() + " hold no positions");
  if (T > c_.max_position_embeddings)
    throw ValueError("[llama] sequence of " + S(T) + " tokens exceeds the context length max_position_embeddings = " +
                     S(c_.max_position_embeddings));
  Stream s{embed_.lookup(ids), {}};  // [B, T, H]
  if (hidden) hidden->assign(1, s.x);
  const Tensor rope_tab = rope_table(inv_freq_, 0, T, device_);
  for (int64_t l = 0; l < c_.num_hidden_layers; ++l) {
    layer(l, s, rope_tab, nullptr);
    if (hidden && l + 1 < c_.num_hidden_layers) hidden->push_back(stream_value(s));
  }
  s.x = s.x.reshape({B * T, H});
  s.pending = s.pending.reshape({B * T, H});
  Tensor n = norm_stream(s, norm_);  // [B * T, H]
  if (hidden) hidden->push_back(n.reshape({B, T, H}));
  Tensor out = logits(n);
  return ids_in.rank() == 1 ? out.reshape({T, V}) : out.reshape({B, T, V});
}

KvCache LlamaModel::new_cache(int64_t batch, int64_t capacity) const {
  capacity = cache_capacity("llama", batch, capacity, c_.max_position_embeddings);
  bool ring = false;
  if (const int64_t w = ring_window(); w > 0 && capacity > w) capacity = w, ring = true;
  KvCache c = zero_cache(c_.num_hidden_layers, {batch, capacity, c_.num_key_value_heads, c_.head_dim}, batch,
                         capacity, device_);
  c.ring = ring;
  return c;
}

Tensor LlamaModel::forward_cached(const Tensor& ids_in, KvCache& cache) const {
  Tensor ids = ids_as_batch(ids_in, "llama");
  const int64_t B = ids.dim(0), T = ids.dim(1);
  if (cache.k.size() != size_t(c_.num_hidden_layers) || cache.batch != B)
    throw ShapeError("[llama] cache does not match ids " + ids.describe() + " (make it with new_cache(" + S(B) + "))");
  if (T < 1) throw ShapeError("[llama] ids " + ids.describe() + " hold no positions");
  if (cache.len + T > c_.max_position_embeddings)
    throw ValueError("[llama] positions " + S(cache.len) + ".." + S(cache.len + T - 1) +
                     " exceed the context length max_position_embeddings = " + S(c_.max_position_embeddings));
  if (!cache.ring && cache.len + T > cache.capacity)
    throw ValueError("[llama] positions " + S(cache.len) + ".." + S(cache.len + T - 1) + " exceed the cache capacity " +
                     S(cache.capacity));
  if (cache.ring && cache.len > 0 && cache.len + T > cache.capacity && T > 1) {
    // A wrapped ring takes one position at a time (see attend).
    Tensor host = ids.device().is_cpu() ? ids : ids.to(Device::cpu());
    Tensor last;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<uint32_t> col(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) {
        const int64_t i = b * T + t;
        col[size_t(b)] = host.dtype() == DType::I32 ? uint32_t(host.data<int32_t>()[i]) : host.data<uint32_t>()[i];
      }
      last = forward_cached(Tensor::from_vector(col, {B, 1}), cache);
    }
    return last;
  }
  // The table first: its upload submits what is recorded before it.
  const Tensor rope_tab = rope_table(inv_freq_, cache.len, T, device_);
  Stream s{embed_.lookup(ids), {}, fused_rows(B * T)};  // [B, T, H]
  // The logits are the last positions' only: the last layer takes only them
  // past its keys and values.
  for (int64_t l = 0; l < c_.num_hidden_layers; ++l) layer(l, s, rope_tab, &cache, l + 1 == c_.num_hidden_layers);
  cache.len += T;
  Stream last = last_rows(s, B, s.x.dim(1));
  return head(last);  // [B, V]
}

}  // namespace forge::models
