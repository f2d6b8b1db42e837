// The tile sizes and workgroup-memory layouts of the tiled flash attention
// forward, of the tiled grad_k / grad_v kernel and of the backward's scores
// kernel (src/webgpu/flash_tiling.h):
// what GPT-2-like and 128-wide heads get at common storage limits, and that
// every layout fits and keeps its regions apart.
#include <gtest/gtest.h>

#include <algorithm>

#include "webgpu/flash_tiling.h"

using forge::webgpu::flash_bwd_tiling;
using forge::webgpu::flash_scores_tiling;
using forge::webgpu::flash_tiling;
using forge::webgpu::FlashTiling;

namespace {

TEST(FlashTiling, ChoicesAtCommonLimits) {
  auto d64 = flash_tiling(64, 49152, 1024);
  ASSERT_TRUE(d64);
  EXPECT_EQ(d64->bq, 64u) << "heads of up to 64 take 64 queries by 32 keys first";
  EXPECT_EQ(d64->bk, 32u);
  EXPECT_EQ(d64->bytes(), 16u * (64 * 16 + 32 * 17 + 32 * 16 + 16 * 17));  // Q, K (P in its space), V, partials
  EXPECT_EQ(d64->p_off, d64->k_off) << "P reuses K's space; V has its own";
  auto d128 = flash_tiling(128, 49152, 1024);
  ASSERT_TRUE(d128);
  EXPECT_EQ(d128->bq, 32u);
  EXPECT_EQ(d128->bk, 32u);
  EXPECT_EQ(d128->bytes(), 40192u);
  EXPECT_EQ(d128->v_off, d128->k_off) << "V reuses K's space; P has its own";
  auto small = flash_tiling(64, 16384, 256);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->bq, 16u);
  EXPECT_FALSE(flash_tiling(128, 16384, 256)) << "too large for WebGPU's default storage";
  EXPECT_FALSE(flash_tiling(6, 49152, 1024)) << "not a multiple of 4";
  EXPECT_FALSE(flash_tiling(132, 65536, 1024));
  auto narrow = flash_tiling(64, 49152, 128);
  ASSERT_TRUE(narrow);
  EXPECT_LE(narrow->bq * 4, 128u);
}

TEST(FlashTiling, LayoutsFitAndDoNotOverlap) {
  for (uint32_t limit : {16384u, 32768u, 49152u, 65536u}) {
    for (int64_t d = 4; d <= 128; d += 4) {
      SCOPED_TRACE("limit " + std::to_string(limit) + " head_dim " + std::to_string(d));
      auto t = flash_tiling(d, limit, 256);
      if (!t) continue;
      const uint32_t d4 = uint32_t(d / 4);
      EXPECT_LE(t->bytes(), limit);
      EXPECT_EQ(t->bk % 16, 0u);
      EXPECT_EQ(t->bq % 16, 0u);
      EXPECT_EQ(t->k_off, t->bq * d4);
      EXPECT_EQ(t->k_stride % 2, 1u);
      EXPECT_GE(t->k_stride, d4);
      EXPECT_EQ(t->row_stride % 2, 1u);
      EXPECT_GE(t->row_stride, t->bq / 4);
      const uint32_t k_end = t->k_off + t->bk * t->k_stride, p_size = t->bk * t->row_stride;
      if (t->v_off == t->k_off) {  // V after the scores: P must not overlap K
        EXPECT_GE(t->p_off, k_end);
        EXPECT_GE(t->red_off, t->p_off + p_size);
      } else {
        EXPECT_EQ(t->p_off, t->k_off);
        EXPECT_GE(t->v_off, std::max(k_end, t->k_off + p_size));
        EXPECT_GE(t->red_off, t->v_off + t->bk * d4);
      }
      EXPECT_EQ(t->vec4s, t->red_off + 16 * t->row_stride);
    }
    EXPECT_TRUE(flash_tiling(64, limit, 256)) << "GPT-2's heads fit every limit";
  }
}

TEST(FlashBwdTiling, ChoicesAtCommonLimits) {
  auto d64 = flash_bwd_tiling(64, 49152, 1024);
  ASSERT_TRUE(d64);
  EXPECT_EQ(d64->bk, 32u);
  EXPECT_EQ(d64->bq, 32u);
  EXPECT_EQ(d64->stride, 17u);
  EXPECT_EQ(d64->bytes(), 43008u);  // K, V, Q, dO [32, 17] and P, dS [32, 8] vec4s
  EXPECT_EQ(d64->invocations(), 64u);
  auto d64_32k = flash_bwd_tiling(64, 32768, 1024);
  ASSERT_TRUE(d64_32k);
  EXPECT_EQ(d64_32k->bk, 16u);
  EXPECT_EQ(d64_32k->bq, 32u);
  EXPECT_FALSE(flash_bwd_tiling(64, 16384, 256)) << "the one-key-per-invocation kernel takes over";
  auto d32_16k = flash_bwd_tiling(32, 16384, 256);
  ASSERT_TRUE(d32_16k);
  EXPECT_EQ(d32_16k->bq, 16u);
  EXPECT_FALSE(flash_bwd_tiling(6, 49152, 1024)) << "not a multiple of 4";
  EXPECT_FALSE(flash_bwd_tiling(132, 65536, 1024));
  EXPECT_FALSE(flash_bwd_tiling(64, 49152, 8)) << "no tile fits 8 invocations";
}

TEST(FlashBwdTiling, LayoutsFit) {
  for (uint32_t limit : {16384u, 32768u, 49152u, 65536u}) {
    for (int64_t d = 4; d <= 128; d += 4) {
      SCOPED_TRACE("limit " + std::to_string(limit) + " head_dim " + std::to_string(d));
      auto t = flash_bwd_tiling(d, limit, 256);
      if (!t) continue;
      const uint32_t d4 = uint32_t(d / 4);
      EXPECT_LE(t->bytes(), limit);
      EXPECT_EQ(t->stride % 2, 1u);
      EXPECT_GE(t->stride, d4);
      EXPECT_GE(t->bq, d4) << "at most 4 vec4 columns of each gradient per invocation";
      EXPECT_EQ(t->vec4s, 2 * (t->bk + t->bq) * t->stride + 2 * t->bq * t->bk / 4);
      EXPECT_LE(t->invocations(), 256u);
    }
  }
}

TEST(FlashScoresTiling, ChoicesAtCommonLimits) {
  auto d64 = flash_scores_tiling(64, 49152, 256);
  ASSERT_TRUE(d64);
  EXPECT_EQ(d64->t, 64u);
  EXPECT_EQ(d64->dc4, 4u) << "one vec4 of each operand an invocation";
  EXPECT_EQ(d64->bytes(), 16384u);  // Q, dO, K, V chunks [16, 64] floats
  EXPECT_EQ(d64->invocations(), 256u);
  auto small = flash_scores_tiling(64, 8192, 256);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->t, 32u) << "64 x 64 tiles need 16 KiB";
  EXPECT_EQ(small->dc4, 2u);
  EXPECT_EQ(small->bytes(), 4096u);
  EXPECT_EQ(small->invocations(), 64u);
  auto few = flash_scores_tiling(64, 49152, 128);
  ASSERT_TRUE(few);
  EXPECT_EQ(few->invocations(), 64u);
  auto head8 = flash_scores_tiling(8, 49152, 256);
  ASSERT_TRUE(head8);
  EXPECT_EQ(head8->dc4, 2u) << "a chunk is never wider than the head";
  EXPECT_EQ(head8->bytes(), 4u * 8 * 16 * 16);  // 8 depths of 16 vec4s an operand
  EXPECT_FALSE(flash_scores_tiling(6, 49152, 256)) << "not a multiple of 4";
  EXPECT_FALSE(flash_scores_tiling(132, 65536, 256));
  EXPECT_FALSE(flash_scores_tiling(64, 2048, 256)) << "nothing fits 2 KiB";
}

}  // namespace
