#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "forge/dtype.h"
#include "forge/error.h"
#include "forge/shape.h"

using namespace forge;

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::U8), 1u);
  EXPECT_EQ(dtype_from_name("bf16"), DType::BF16);
  EXPECT_THROW(dtype_from_name("f8"), Error);
}

TEST(DType, HalfConversionsRoundTripEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << "f16 bits " << h;
    float b = bf16_to_f32(uint16_t(h));
    if (std::isnan(b)) continue;
    ASSERT_EQ(f32_to_bf16(b), h) << "bf16 bits " << h;
  }
}

TEST(DType, NarrowingRoundsToNearestEven) {
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 1.0f / 2048)), 1.0f);             // tie -> even
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie -> even (up)
  EXPECT_EQ(f16_to_f32(f32_to_f16(65520.0f)), INFINITY);
  EXPECT_EQ(f16_to_f32(f32_to_f16(5.96046448e-08f)), 5.96046448e-08f);     // smallest subnormal
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.00390625f)), 1.0f);                  // tie -> even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.01171875f)), 1.015625f);            // tie -> even (up)
}

TEST(Shape, NumelAndString) {
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(numel({2, 3, 4}), 24);
  EXPECT_EQ(numel({5, 0}), 0);
  EXPECT_EQ(shape_str({2, 16, 1000}), "[2, 16, 1000]");
}
