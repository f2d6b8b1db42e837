#include "webgpu/flash_tiling.h"

#include <algorithm>
#include <span>

namespace forge::webgpu {

namespace {

// V in its own space (loaded with K, so both loads overlap) and P in K's
// space once the scores are read; or, smaller when bq < head_dim, V in K's
// space (loaded after the scores) and P in its own.
FlashTiling layout(uint32_t d4, uint32_t bq, uint32_t bk, bool v_reuses_k) {
  FlashTiling t;
  t.bq = bq, t.bk = bk;
  t.k_stride = d4 | 1u;
  t.row_stride = (bq / 4) | 1u;
  t.k_off = bq * d4;
  const uint32_t k_size = bk * t.k_stride, p_size = bk * t.row_stride, v_size = bk * d4;
  if (v_reuses_k) {
    t.v_off = t.k_off;
    t.p_off = t.k_off + k_size;
    t.red_off = t.p_off + p_size;
  } else {
    t.p_off = t.k_off;
    t.v_off = t.k_off + std::max(k_size, p_size);
    t.red_off = t.v_off + v_size;
  }
  t.vec4s = t.red_off + 16 * t.row_stride;
  return t;
}

}  // namespace

std::optional<FlashTiling> flash_tiling(int64_t head_dim, uint64_t storage_bytes, uint32_t max_invocations) {
  if (head_dim <= 0 || head_dim > 128 || head_dim % 4 != 0) return std::nullopt;
  const uint32_t d4 = uint32_t(head_dim / 4);
  // Largest first (more scores per invocation per staged vec4), except that
  // heads of up to 64 take 64 queries by 32 keys first, then the smaller
  // tiles: 64 x 64 is slowest there. On the H200, ms a layer at GPT-2's
  // 1024-token prefill / SmolLM2-360M's / its B4 x T512 training, two calls:
  // 64x32 0.137-0.139 / 0.138-0.141 / 0.149-0.151, 32x16 0.162-0.165 / 0.163
  // / 0.165-0.168, 16x16 0.155-0.158 / 0.185 / 0.191, 32x32 0.161-0.163 /
  // 0.179-0.182 / 0.188-0.190, 64x16 0.176 / 0.176 / 0.190, 64x64 0.435-0.439
  // / 0.435 / 0.323; GPT-2's prefill of 1024 tokens 8.75 ms in 64x32, 9.02 in
  // 32x16. Wider heads keep the order by size (not measured).
  // Measured and rejected: invocations that own two groups of 4 queries
  // (half as many invocations, each key and value vec4 read from workgroup
  // memory feeding twice the sums). On an H100, ms a layer at the same three
  // shapes: 64x32 as here 0.127-0.134 / 0.129-0.136 / 0.139-0.140; in two
  // groups 64x32 0.168-0.171 / 0.171 / 0.184, 64x16 0.173 / 0.175 / 0.191,
  // 32x16 0.198 / 0.212 / 0.207, 32x64 0.269 / 0.312 / 0.337, 32x32 0.286 /
  // 0.329 / 0.344; SmolLM2-360M's prefill of 1024 tokens 23.8 ms against
  // 25.1-25.2 (64x32 in two groups).
  constexpr uint32_t kBySize[][2] = {{64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}};
  constexpr uint32_t kNarrow[][2] = {{64, 32}, {32, 16}, {16, 16}};
  using Tiles = std::span<const uint32_t[2]>;
  for (const auto& [bq, bk] : d4 <= 16 ? Tiles(kNarrow) : Tiles(kBySize)) {
    if (bq * 4 > max_invocations) continue;
    for (bool v_reuses_k : {false, true}) {
      FlashTiling t = layout(d4, bq, bk, v_reuses_k);
      if (t.bytes() <= storage_bytes) return t;
    }
  }
  return std::nullopt;
}

std::optional<FlashBwdTiling> flash_bwd_tiling(int64_t head_dim, uint64_t storage_bytes, uint32_t max_invocations) {
  if (head_dim <= 0 || head_dim > 128 || head_dim % 4 != 0) return std::nullopt;
  const uint32_t d4 = uint32_t(head_dim / 4);
  // Largest first; an invocation holds at most 4 vec4 columns of each
  // gradient (MAX_DC of the kernel), so bq / 4 * 4 >= head_dim / 4.
  constexpr uint32_t kTiles[][2] = {{32, 32}, {16, 32}, {32, 16}, {16, 16}};
  for (const auto& [bk, bq] : kTiles) {
    FlashBwdTiling t;
    t.bk = bk, t.bq = bq, t.stride = d4 | 1u;
    t.vec4s = 2 * (bk + bq) * t.stride + 2 * bq * (bk / 4);
    if (bq >= d4 && t.invocations() <= max_invocations && t.bytes() <= storage_bytes) return t;
  }
  return std::nullopt;
}

std::optional<FlashScoresTiling> flash_scores_tiling(int64_t head_dim, uint64_t storage_bytes,
                                                     uint32_t max_invocations) {
  if (head_dim <= 0 || head_dim > 128 || head_dim % 4 != 0) return std::nullopt;
  const uint32_t d4 = uint32_t(head_dim / 4);
  // Larger tiles first (more scores per staged vec4). On an H100, ms of the
  // whole backward (scores and products) at GPT-2's B8 x T1024 / SmolLM2-
  // 360M's B4 x T512 training, one command: 64x64 tiles in chunks of 4 vec4
  // columns 1.59 / 0.380; with 8 queries an invocation 1.74 / 0.410, chunks
  // of 8 2.15 / 0.452, both 2.72 / 0.548. In another command, the next
  // chunk fetched during the current one's sums: 1.79 against 1.61. The
  // layout before (rows of the head in workgroup memory, an invocation's
  // keys 16 apart, scalar stores) measured 0.390 at SmolLM2-360M's shape
  // and 0.427 at GPT-2's 1024-token prefill, against 0.380 and 0.417.
  for (const uint32_t edge : {64u, 32u}) {
    FlashScoresTiling t;
    t.t = edge, t.dc4 = std::min(edge / 16, d4);
    t.vec4s = 4 * (4 * t.dc4) * (edge / 4);
    if (t.invocations() <= max_invocations && t.bytes() <= storage_bytes) return t;
  }
  return std::nullopt;
}

}  // namespace forge::webgpu
