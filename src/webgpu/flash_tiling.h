// Tile sizes and the workgroup-memory layouts of the tiled prefill kernel
// (shaders/flash_fwd_tiled.wgsl), of the tiled grad_k / grad_v kernel
// (shaders/flash_bwd_dkv_tiled.wgsl) and of the backward's scores kernel
// (shaders/flash_bwd_scores.wgsl), chosen per head_dim so that they fit the
// device's workgroup storage. Offsets and sizes count vec4s.
#pragma once
#include <cstdint>
#include <optional>

namespace forge::webgpu {

struct FlashTiling {
  uint32_t bq = 0, bk = 0;  // queries per workgroup (bq * 4 invocations), keys per tile
  uint32_t k_stride = 0;    // vec4s per staged K row: head_dim / 4, made odd against bank conflicts
  uint32_t k_off = 0;       // K tile [bk, k_stride], after the scaled Q block [bq, head_dim / 4] at 0
  uint32_t v_off = 0;       // V tile [bk, head_dim / 4]; k_off when V reuses K's space
  uint32_t row_stride = 0;  // vec4s per row of P and of the partials: bq / 4, made odd likewise
  uint32_t p_off = 0;       // P tile [bk, row_stride]; k_off when P reuses K's space
  uint32_t red_off = 0;     // per-row partial maxima and sums [16, row_stride]
  uint32_t vec4s = 0;       // the whole layout

  uint64_t bytes() const { return uint64_t(vec4s) * 16; }
};

// The largest tiling whose layout fits `storage_bytes` and whose workgroup
// fits `max_invocations`; none when head_dim is not a multiple of 4 or above
// 128, or when nothing fits (the caller then runs the one-query-per-invocation
// kernel).
std::optional<FlashTiling> flash_tiling(int64_t head_dim, uint64_t storage_bytes, uint32_t max_invocations);

// The backward's layout: K and V [bk, stride] of the block, Q and grad_out
// [bq, stride] of the query tile, then P and dS [bq, bk / 4].
struct FlashBwdTiling {
  uint32_t bk = 0, bq = 0;  // keys per workgroup, queries per tile
  uint32_t stride = 0;      // vec4s per staged row: head_dim / 4, made odd against bank conflicts
  uint32_t vec4s = 0;       // the whole layout

  uint32_t invocations() const { return bk * bq / 16; }
  uint64_t bytes() const { return uint64_t(vec4s) * 16; }
};

// The largest backward tiling that fits, as flash_tiling; none when head_dim
// is not a multiple of 4 or above 128, or when nothing fits (the caller then
// runs the one-key-per-invocation kernel).
std::optional<FlashBwdTiling> flash_bwd_tiling(int64_t head_dim, uint64_t storage_bytes, uint32_t max_invocations);

// The scores kernel's layout: chunks of Q, grad_out, K and V, each
// [4 dc4, t] floats (depth-major), over tiles of t queries by t keys; an
// invocation owns 4 queries by 4 keys and stages one vec4 of each operand
// a chunk.
struct FlashScoresTiling {
  uint32_t t = 0;      // tile edge
  uint32_t dc4 = 0;    // vec4 columns of the head staged at a time: t / 16, or the head's if fewer
  uint32_t vec4s = 0;  // the whole layout: 4 operands x 4 dc4 depths x t / 4

  uint32_t invocations() const { return t * t / 16; }
  uint64_t bytes() const { return uint64_t(vec4s) * 16; }
};

// The largest scores tiling that fits; none when head_dim is not a
// multiple of 4 or above 128, or when nothing fits (the caller then takes
// the other backward).
std::optional<FlashScoresTiling> flash_scores_tiling(int64_t head_dim, uint64_t storage_bytes,
                                                     uint32_t max_invocations);

}  // namespace forge::webgpu
