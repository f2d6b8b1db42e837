// Continuous batching for the Llama family: rows of one KV cache
// [rows, capacity, nkv, hd] hold sequences at different positions. A prompt
// fills its row alone (prefill_row); decode_rows then steps rows 0 .. n-1
// together: the n new tokens go through the block as one sequence of n
// tokens (so rope takes row i of a table gathered at each row's position),
// each row's keys go to its own slot, and attention masks every slot past
// the row's position (and before its window). The block itself is
// forward.cpp's (project / finish), so a row computes what forward_cached
// computes for its sequence alone.
#include <cmath>

#include "forge/ops.h"
#include "models/common/cache.h"
#include "models/llama/llama.h"

namespace forge::models {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

void check_row_cache(const KvCache& cache, int64_t layers) {
  if (cache.k.size() != size_t(layers) || cache.v.size() != size_t(layers))
    throw ShapeError("[llama] cache has " + S(int64_t(cache.k.size())) + " layers, the model " + S(layers));
  if (cache.ring)
    throw ValueError("[llama] per-row decode needs a cache of at most the sliding window (" + S(cache.capacity) +
                     " positions), not a ring");
}

}  // namespace

Tensor LlamaModel::prefill_row(const Tensor& ids_in, KvCache& cache, int64_t row) const {
  Tensor ids = ids_as_batch(ids_in, "llama");
  const int64_t T = ids.dim(1);
  check_row_cache(cache, c_.num_hidden_layers);
  if (ids.dim(0) != 1) throw ShapeError("[llama] prefill_row takes one sequence, got ids " + ids.describe());
  if (T < 1) throw ShapeError("[llama] ids " + ids.describe() + " hold no positions");
  if (row < 0 || row >= cache.batch)
    throw ValueError("[llama] row " + S(row) + " outside a cache of " + S(cache.batch) + " rows");
  if (T > cache.capacity)
    throw ValueError("[llama] a prompt of " + S(T) + " tokens exceeds the cache capacity " + S(cache.capacity));
  const Tensor rope_tab = rope_table(inv_freq_, 0, T, device_);
  Stream s{embed_.lookup(ids), {}, fused_rows(T)};  // [1, T, H]
  for (int64_t l = 0; l < c_.num_hidden_layers; ++l) {
    Qkv p = project(l, s);
    rope(p.q, c_.head_dim, rope_tab);
    rope(p.k, c_.head_dim, rope_tab);
    kv_append_rows(cache.k[size_t(l)], p.k, row, {0});
    kv_append_rows(cache.v[size_t(l)], p.v, row, {0});
    AttentionOptions o;  // a fresh sequence attends over its own keys only
    o.causal = true;
    o.window = c_.window(l);
    // Past its keys and values the last layer takes the last position only.
    const bool last_only = l + 1 == c_.num_hidden_layers && !s.fused && T > 1;
    if (last_only) o.kv_offset = T - 1;
    Tensor a = flash_attention_v2(last_only ? last_position_of(p.q) : p.q, p.k, p.v, o);
    if (last_only) s.x = last_position_of(s.x);
    finish(l, s, a.reshape({a.dim(1), c_.num_attention_heads * c_.head_dim}));
  }
  Stream last = last_rows(s, 1, s.x.dim(1));
  return head(last);  // [1, V]
}

Tensor LlamaModel::decode_rows(const Tensor& ids_in, KvCache& cache, const std::vector<int64_t>& pos) const {
  check_row_cache(cache, c_.num_hidden_layers);
  const int64_t n = int64_t(pos.size()), cap = cache.capacity, hd = c_.head_dim;
  if (ids_in.numel() != n || n < 1 || n > cache.batch)
    throw ShapeError("[llama] decode_rows takes one id per row: ids " + ids_in.describe() + " for " + S(n) +
                     " positions and a cache of " + S(cache.batch) + " rows");
  std::vector<float> tab;  // rows of rope_table at each row's position: [n, hd / 2, 2]
  for (int64_t i = 0; i < n; ++i) {
    if (pos[size_t(i)] < 0 || pos[size_t(i)] >= cap)
      throw ValueError("[llama] row " + S(i) + " position " + S(pos[size_t(i)]) + " outside the cache capacity " +
                       S(cap));
    const std::vector<float> r = rope_table(inv_freq_, pos[size_t(i)], 1, Device::cpu()).to_vector<float>();
    tab.insert(tab.end(), r.begin(), r.end());
  }
  const Tensor rope_tab = Tensor::from_vector(tab, {n, hd / 2, 2}, device_);
  Stream s{embed_.lookup(ids_in.reshape({1, n})), {}, fused_rows(n)};  // [1, n, H]: the rows' tokens as one sequence
  std::vector<std::pair<int64_t, Tensor>> masks;         // by window
  for (int64_t l = 0; l < c_.num_hidden_layers; ++l) {
    Qkv p = project(l, s);  // [1, n, ..]: the rows' tokens as one sequence
    const int64_t nkv = c_.num_key_value_heads, nh = c_.num_attention_heads;
    Tensor q = p.q.reshape({n, 1, nh, hd}), k = p.k.reshape({n, 1, nkv, hd});
    // Rotated, each row's k and v into its slot (one dispatch on WebGPU).
    rope_append_rows(q, k, p.v.reshape({n, 1, nkv, hd}), rope_tab, cache.k[size_t(l)], cache.v[size_t(l)], pos);
    const int64_t w = c_.window(l);
    const Tensor* mask = nullptr;
    for (auto& [mw, m] : masks)
      if (mw == w) mask = &m;
    if (!mask) mask = &masks.emplace_back(w, row_mask(pos, cap, w, device_)).second;
    Tensor a = flash_attention_v2(q, first_rows(cache.k[size_t(l)], n),
                                  first_rows(cache.v[size_t(l)], n), rows_attention(pos), mask);
    finish(l, s, a.reshape({n, nh * hd}));
  }
  Stream rows = last_rows(s, n, 1);
  return head(rows);  // [n, V]
}

}  // namespace forge::models
