// The parity helper itself: a comparison that passes anything hides every
// regression behind it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "parity/parity.h"

using forge::testing::all_close;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST(ParityHelper, FiniteValuesUseTheTolerance) {
  EXPECT_TRUE(all_close({1.0f, 2.0f}, {1.0f, 2.001f}, 1e-2, 0));
  EXPECT_FALSE(all_close({1.0f, 2.0f}, {1.0f, 2.1f}, 1e-2, 0));
  EXPECT_TRUE(all_close({100.0f}, {101.0f}, 0, 2e-2));
  EXPECT_FALSE(all_close({1.0f}, {1.0f, 2.0f}, 1, 1));
}

TEST(ParityHelper, InfinitiesMustMatchExactly) {
  // inf - inf is NaN: the old bound check let any value pass an infinite expectation.
  EXPECT_FALSE(all_close({5.0f}, {kInf}, 1e-3, 1e-3));
  EXPECT_FALSE(all_close({-kInf}, {kInf}, 1e-3, 1e-3));
  EXPECT_FALSE(all_close({kInf}, {3.0f}, 1e9, 1e9));
  EXPECT_FALSE(all_close({kNaN}, {kInf}, 1e-3, 1e-3));
  EXPECT_TRUE(all_close({kInf, -kInf, 1.0f}, {kInf, -kInf, 1.0f}, 0, 0));
}

TEST(ParityHelper, NanOnlyWhereExpected) {
  EXPECT_FALSE(all_close({kNaN}, {1.0f}, 1e9, 1e9));
  EXPECT_FALSE(all_close({1.0f}, {kNaN}, 1e9, 1e9));
  EXPECT_TRUE(all_close({kNaN, 2.0f}, {kNaN, 2.0f}, 0, 0));
  // The report names the offending element.
  auto r = all_close({1.0f, 2.0f, 5.0f}, {1.0f, 2.0f, kInf}, 1e-3, 1e-3);
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("element 2"), std::string::npos) << r.message();
}
