// exp and sigmoid in double for the CPU kernels' hot loops. libm's exp is a
// call GCC cannot vectorize; this one is inline and branch-free (selects
// instead of branches, integer work only on exponent bits), so loops calling
// it vectorize. It is within 1 double ulp, so results evaluated in double and
// rounded to float are correctly rounded in practically every case
// (tests/unit/test_vec_math.cpp).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace forge::cpu::vm {

namespace detail {

constexpr double kLog2e = 0x1.71547652b82fep0;
// ln 2 split so that k * kLn2Hi is exact for any reachable k (kLn2Hi has 32
// significant bits); kLn2Lo carries the next 53.
constexpr double kLn2Hi = 0x1.62e42fee00000p-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
// Adding 1.5 * 2^52 rounds a double of magnitude < 2^51 to an integer held in
// the low mantissa bits: round-to-nearest without a float-to-int conversion.
constexpr double kShifter = 0x1.8p52;

constexpr double inv_factorial(int n) { return n <= 1 ? 1.0 : inv_factorial(n - 1) / n; }

// e^r - 1 for |r| <= ln2 / 2 (plus rounding slack): Taylor through r^13,
// whose remainder is below 2^-56 relative. Written as r + r^2 q so that
// adding 1 afterwards rounds once, with q's error scaled down by r^2.
inline double expm1_reduced(double r) {
  double q = inv_factorial(13);
  q = q * r + inv_factorial(12);
  q = q * r + inv_factorial(11);
  q = q * r + inv_factorial(10);
  q = q * r + inv_factorial(9);
  q = q * r + inv_factorial(8);
  q = q * r + inv_factorial(7);
  q = q * r + inv_factorial(6);
  q = q * r + inv_factorial(5);
  q = q * r + inv_factorial(4);
  q = q * r + inv_factorial(3);
  q = q * r + inv_factorial(2);
  return r + (r * r) * q;
}

// 2^k for an integer k in [-1022, 1023] held by `shifted` = k + kShifter:
// the low bits of its representation are k, moved into the exponent field.
inline double pow2(double shifted) {
  return std::bit_cast<double>((std::bit_cast<uint64_t>(shifted) + 1023u) << 52);
}

}  // namespace detail

// e^x within about 1 ulp, subnormal results included; exp(-inf) = 0,
// exp(+inf) = inf, exp(nan) = nan.
inline double exp(double x) {
  using namespace detail;
  // |x| > 746 gives 0 or inf anyway. One clamp of |x|: two chained selects
  // keep GCC from vectorizing. NaN passes through.
  x = std::copysign(std::min(std::fabs(x), 746.0), x);
  // x = k ln2 + r with |r| <= ln2 / 2 (kLn2Lo's term rounds once, at r's scale).
  const double k = (x * kLog2e + kShifter) - kShifter;
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  // 2^k as 2^k1 * 2^(k - k1) with k1 = k / 2: each factor is a normal double
  // for k in [-1077, 1077], so a subnormal or infinite result rounds once.
  const double k1 = (k * 0.5 + kShifter) - kShifter;
  return (1.0 + expm1_reduced(r)) * pow2(k1 + kShifter) * pow2((k - k1) + kShifter);
}

// 1 / (1 + e^-x).
inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

}  // namespace forge::cpu::vm
