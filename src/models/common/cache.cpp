#include "models/common/cache.h"

#include <algorithm>
#include <cmath>

#include "forge/ops.h"

namespace forge::models {

int64_t cache_capacity(const char* family, int64_t batch, int64_t capacity, int64_t ctx) {
  if (batch < 1) throw ValueError(std::string("[") + family + "] cache batch must be >= 1, got " + std::to_string(batch));
  if (capacity < 0 || capacity > ctx)
    throw ValueError(std::string("[") + family + "] cache capacity must be in [0, " + std::to_string(ctx) + "], got " +
                     std::to_string(capacity));
  return capacity ? capacity : ctx;
}

KvCache zero_cache(int64_t layers, const Shape& shape, int64_t batch, int64_t capacity, const Device& device) {
  KvCache c;
  c.batch = batch;
  c.capacity = capacity;
  for (int64_t l = 0; l < layers; ++l) {
    c.k.push_back(Tensor::zeros(shape, DType::F32, device));
    c.v.push_back(Tensor::zeros(shape, DType::F32, device));
  }
  return c;
}

Tensor last_positions(const Tensor& x, int64_t B, int64_t T) {
  if (T == 1) return x.reshape({B, x.dim(-1)});
  std::vector<uint32_t> rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) rows[size_t(b)] = uint32_t(b * T + T - 1);
  // Gathered as embedding rows: a slice need not meet a binding's alignment.
  return embedding(Tensor::from_vector(rows, {B}), x);
}

Tensor last_position_of(const Tensor& t) {
  const int64_t B = t.dim(0), T = t.dim(1), row = t.numel() / (B * T);
  Shape s = t.shape();
  s[1] = 1;
  return last_positions(t.reshape({B * T, row}), B, T).reshape(s);
}

Tensor first_rows(const Tensor& t, int64_t n) {
  if (n == t.dim(0)) return t;
  const int64_t B = t.dim(0);
  Shape s = t.shape();
  s[0] = n;
  return t.reshape({B, t.numel() / B}).slice_rows(0, n).reshape(s);
}

bool fused_rows(int64_t rows) { return rows <= 4; }

Tensor first_positions(const Tensor& cache, int64_t n) {
  if (cache.dim(0) != 1) return cache;
  const int64_t cap = cache.dim(1), nkv = cache.dim(2), hd = cache.dim(3);
  return cache.reshape({cap, nkv, hd}).slice_rows(0, n).reshape({1, n, nkv, hd});
}

Tensor row_mask(const std::vector<int64_t>& pos, int64_t cap, int64_t window, const Device& device) {
  const int64_t n = int64_t(pos.size());
  std::vector<float> m(size_t(n * cap), -INFINITY);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lo = window > 0 ? std::max<int64_t>(0, pos[size_t(i)] - window + 1) : 0;
    for (int64_t s = lo; s <= pos[size_t(i)]; ++s) m[size_t(i * cap + s)] = 0.0f;
  }
  return Tensor::from_vector(m, {n, 1, 1, cap}, device);
}

AttentionOptions rows_attention(const std::vector<int64_t>& pos) {
  AttentionOptions o;
  o.causal = true;
  o.kv_offset = pos.empty() ? 0 : *std::max_element(pos.begin(), pos.end());
  return o;
}

}  // namespace forge::models
