// Continuous batching for GPT-2: rows of one token-major KV cache
// [rows, capacity, n_head, hd] hold sequences at different positions. A
// prompt is prefilled alone through forward_cached (so its logits are that
// call's) and its keys and values copied into its row; decode_rows then
// steps rows 0 .. n-1 together as a batch of n one-token sequences, each
// token embedded at its row's position, its keys written to its row's slot,
// and attention masking every slot past that position. Around attention the
// block is forward.cpp's (qkv_packed / block_out).
#include "forge/gpt2.h"
#include "forge/ops.h"
#include "models/common/cache.h"

namespace forge {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

void check_row_cache(const KvCache& cache, const Gpt2Config& c) {
  if (cache.k.size() != size_t(c.n_layer) || cache.v.size() != size_t(c.n_layer))
    throw ShapeError("[gpt2] cache has " + S(int64_t(cache.k.size())) + " layers, the model " + S(c.n_layer));
  const Tensor& k = cache.k[0];
  if (k.rank() != 4 || k.dim(1) != cache.capacity || k.dim(2) != c.n_head || k.dim(3) != c.head_dim())
    throw ShapeError("[gpt2] per-row decode takes a token-major cache [rows, capacity, n_head, hd] (new_cache), "
                     "got " + k.describe());
}

}  // namespace

Tensor Gpt2::prefill_row(const Tensor& ids_in, KvCache& cache, int64_t row) const {
  Tensor ids = ids_as_batch(ids_in, "gpt2");
  const int64_t T = ids.dim(1);
  check_row_cache(cache, config_);
  if (ids.dim(0) != 1) throw ShapeError("[gpt2] prefill_row takes one sequence, got ids " + ids.describe());
  if (row < 0 || row >= cache.batch)
    throw ValueError("[gpt2] row " + S(row) + " outside a cache of " + S(cache.batch) + " rows");
  if (T > cache.capacity)
    throw ValueError("[gpt2] a prompt of " + S(T) + " tokens exceeds the cache capacity " + S(cache.capacity));
  KvCache alone = new_cache(1, T);  // token-major [1, T, nh, hd], as the rows
  Tensor logits = forward_cached(ids, alone);  // [1, V]
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    kv_append_rows(cache.k[size_t(l)], alone.k[size_t(l)], row, {0});
    kv_append_rows(cache.v[size_t(l)], alone.v[size_t(l)], row, {0});
  }
  return logits;
}

Tensor Gpt2::decode_rows(const Tensor& ids_in, KvCache& cache, const std::vector<int64_t>& pos) const {
  check_row_cache(cache, config_);
  const int64_t n = int64_t(pos.size()), cap = cache.capacity, C = config_.n_embd;
  if (ids_in.numel() != n || n < 1 || n > cache.batch)
    throw ShapeError("[gpt2] decode_rows takes one id per row: ids " + ids_in.describe() + " for " + S(n) +
                     " positions and a cache of " + S(cache.batch) + " rows");
  std::vector<uint32_t> at(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (pos[size_t(i)] < 0 || pos[size_t(i)] >= cap)
      throw ValueError("[gpt2] row " + S(i) + " position " + S(pos[size_t(i)]) + " outside the cache capacity " +
                       S(cap));
    at[size_t(i)] = uint32_t(pos[size_t(i)]);
  }
  // [n, 1, C]: each row's token at its own position.
  Tensor x = add(token_rows(ids_in.reshape({n, 1})),
                 embedding(Tensor::from_vector(at, {n, 1}), w_.wpe));
  const Tensor mask = models::row_mask(pos, cap, 0, device_);  // [n, 1, 1, cap]
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    // q [n, 1, nh, hd]; each row's k and v into its slot (one dispatch on WebGPU).
    const Tensor q = qkv_append_rows(qkv_packed(l, x), cache.k[size_t(l)], cache.v[size_t(l)], pos);
    Tensor a = flash_attention_v2(q, models::first_rows(cache.k[size_t(l)], n),
                                  models::first_rows(cache.v[size_t(l)], n), models::rows_attention(pos), &mask);
    x = block_out(l, x, a.reshape({n, C}));
  }
  return lm_head(x).reshape({n, config_.vocab_size});  // [n, V]
}

}  // namespace forge
