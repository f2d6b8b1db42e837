// The Philox4x32-10 stream behind dropout and sampling (src/cpu/philox.h):
// Random123's published answer, and the CPU dropout kernel (vectorized per
// ISA) keeping exactly the elements whose word clears the threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/philox.h"
#include "forge/ops.h"

namespace {

using forge::Tensor;
using forge::cpu::philox_word0;

// Random123's known-answer vector for philox4x32-10 with counter and key all
// zero: word 0 is 0x6627e8d5.
TEST(Philox, KnownAnswer) { EXPECT_EQ(philox_word0(0, 0, 0, 0), 0x6627e8d5u); }

TEST(Philox, DropoutKeepsWhereTheWordClearsTheThreshold) {
  const int64_t n = 4099;  // not a multiple of any vector width
  const float p = 0.25f;
  const uint64_t seed = 0xDEADBEEF12345678ull;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = 1.0f + float(i % 13);
  const std::vector<float> y = forge::dropout(Tensor::from_vector(x, {n}), p, seed).to_vector<float>();
  const uint32_t threshold = uint32_t(std::floor(double(p) * 4294967296.0));
  const float scale = float(1.0 / (1.0 - double(p)));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = philox_word0(uint32_t(i), 0, uint32_t(seed), uint32_t(seed >> 32)) >= threshold;
    ASSERT_EQ(y[size_t(i)], keep ? x[size_t(i)] * scale : 0.0f) << "element " << i;
    kept += keep;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, n);
}

}  // namespace
