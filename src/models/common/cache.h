// Pieces of the KV-cache path every family shares.
#pragma once
#include <cstdint>
#include <vector>

#include "forge/model.h"
#include "forge/ops/attention.h"

namespace forge::models {

// Checks a new_cache request of `family` (batch >= 1, capacity in [0, ctx])
// and returns the capacity to allocate (ctx for 0).
int64_t cache_capacity(const char* family, int64_t batch, int64_t capacity, int64_t ctx);

// A cache of `layers` zeroed k and v tensors of `shape` each.
KvCache zero_cache(int64_t layers, const Shape& shape, int64_t batch, int64_t capacity, const Device& device);

// x [B * T, C] -> [B, C]: each sequence's last position (row b * T + T - 1),
// gathered on x's device; x itself when T == 1.
Tensor last_positions(const Tensor& x, int64_t B, int64_t T);

// t [B, T, ...] -> [B, 1, ...]: each sequence's last position (generation
// needs the last layer past its keys and values only there).
Tensor last_position_of(const Tensor& t);

// The first n rows of a row cache tensor [B, cap, ..] (a view at offset 0).
Tensor first_rows(const Tensor& t, int64_t n);

// Whether a forward over `rows` = B * T positions takes the fused decode
// kernels (matvec_multi.wgsl's and matvec*.wgsl's MAX_ROWS of one sequence);
// prefill keeps its separate norm passes.
bool fused_rows(int64_t rows);

// The first n positions of a cache tensor [B, cap, nkv, hd]: a view when
// B == 1; for B > 1 the whole tensor (the caller masks the unfilled tail).
Tensor first_positions(const Tensor& cache, int64_t n);

// Additive attention mask [n, 1, 1, cap] for decode_rows: row i sees slots
// max(0, pos_i - window + 1) .. pos_i (window 0: from slot 0).
Tensor row_mask(const std::vector<int64_t>& pos, int64_t cap, int64_t window, const Device& device);

// Attention options for decode_rows' one query per row beside row_mask: causal
// at the furthest row's position, so that the kernels read the cache's first
// max(pos) + 1 slots instead of all `cap` of them (every row's mask hides
// what lies past its own position anyway).
AttentionOptions rows_attention(const std::vector<int64_t>& pos);

}  // namespace forge::models
