// vm::exp and vm::sigmoid (src/cpu/vec_math.h) against libm over dense sweeps
// (wide linear ranges, every binade down to the subnormals, the underflow
// and overflow edges) and the special values; and the floats that the CPU
// softmax, GELU and SiLU produce with them against long double references.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include "cpu/vec_math.h"
#include "forge/ops.h"

namespace {

namespace vm = forge::cpu::vm;
using forge::Tensor;

// Distance in units in the last place between two finite doubles (0 when both
// are the same value, +0 / -0 included).
double ulp_distance(double a, double b) {
  auto ordered = [](double v) {
    const int64_t i = std::bit_cast<int64_t>(v);
    return i < 0 ? std::numeric_limits<int64_t>::min() - i : i;
  };
  const int64_t ia = ordered(a), ib = ordered(b);
  return double(ia > ib ? uint64_t(ia) - uint64_t(ib) : uint64_t(ib) - uint64_t(ia));
}

// `n` + 1 evenly spaced points of [lo, hi], each also nudged an ulp either way.
std::vector<double> sweep(double lo, double hi, int n) {
  std::vector<double> xs;
  for (int i = 0; i <= n; ++i) {
    const double x = lo + (hi - lo) * double(i) / double(n);
    xs.insert(xs.end(), {x, std::nextafter(x, -INFINITY), std::nextafter(x, INFINITY)});
  }
  return xs;
}

// +-m 2^e for every exponent e in [lo, hi] and a few mantissas m.
std::vector<double> binades(int lo, int hi) {
  std::vector<double> xs;
  for (int e = lo; e <= hi; ++e)
    for (double m : {1.0, 1.1, 1.37, 1.5, 1.75, 1.999}) xs.insert(xs.end(), {std::ldexp(m, e), -std::ldexp(m, e)});
  return xs;
}

// The largest ulp distance of fast(x) from ref(x) over xs; infinities must match.
template <class Fast, class Ref>
double max_ulp(const std::vector<double>& xs, Fast fast, Ref ref) {
  double worst = 0;
  for (double x : xs) {
    const double want = ref(x), got = fast(x);
    if (std::isinf(want) || std::isinf(got)) {
      EXPECT_EQ(got, want) << "x = " << x;
      continue;
    }
    worst = std::max(worst, ulp_distance(got, want));
  }
  return worst;
}

TEST(VecMath, ExpWithinAnUlpOfLibm) {
  std::vector<double> xs = sweep(-40, 40, 400000);
  for (const auto& part : {sweep(-746, 711, 200000), sweep(-745.2, -708, 20000), sweep(700, 709.8, 20000),
                           binades(-1074, 3)})
    xs.insert(xs.end(), part.begin(), part.end());
  EXPECT_LE(max_ulp(xs, [](double x) { return vm::exp(x); }, [](double x) { return std::exp(x); }), 1.0);
}

// Below -709 e^-x overflows and sigmoid flushes to 0 (as 1 / (1 + std::exp(-x))
// does), far below float range.
TEST(VecMath, SigmoidWithinTwoUlpOfLongDouble) {
  const double worst = max_ulp(sweep(-709, 800, 400000), [](double x) { return vm::sigmoid(x); },
                               [](double x) { return double(1.0L / (1.0L + std::exp(-(long double)x))); });
  EXPECT_LE(worst, 2.0);
}

TEST(VecMath, SpecialValues) {
  const double inf = INFINITY;
  EXPECT_EQ(vm::exp(0.0), 1.0);
  EXPECT_EQ(vm::exp(-0.0), 1.0);
  EXPECT_EQ(vm::exp(-inf), 0.0);
  EXPECT_EQ(vm::exp(inf), inf);
  EXPECT_EQ(vm::exp(709.79), inf);
  EXPECT_EQ(vm::exp(-746.0), 0.0);
  EXPECT_EQ(vm::exp(-745.0), std::exp(-745.0));  // subnormal
  EXPECT_EQ(vm::exp(-1000.0), 0.0);
  EXPECT_TRUE(std::isnan(vm::exp(std::nan(""))));
  EXPECT_EQ(vm::sigmoid(-inf), 0.0);
  EXPECT_EQ(vm::sigmoid(inf), 1.0);
  EXPECT_EQ(vm::sigmoid(0.0), 0.5);
}

// Every `stride`-th float of [-hi, hi] (bit patterns walked as integers).
std::vector<float> floats(float hi, uint32_t stride) {
  std::vector<float> xs;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t bits = 0; bits <= std::bit_cast<uint32_t>(hi); bits += stride)
      xs.push_back(std::bit_cast<float>(bits | sign));
  return xs;
}

// How many of got[i] differ from want(xs[i]) rounded to float.
template <class Want>
int64_t misrounded(const std::vector<float>& xs, const std::vector<float>& got, Want want) {
  int64_t bad = 0;
  for (size_t i = 0; i < xs.size(); ++i) bad += got[i] != float(want((long double)xs[i]));
  return bad;
}

// The CPU GELU, its gradient and SiLU give the correctly rounded float (of a
// long double evaluation) for ~4.4M inputs of [-12, 12], the far negative
// tail included, where 0.5 x (1 + tanh u) in double used to cancel.
TEST(VecMath, ActivationsCorrectlyRounded) {
  const std::vector<float> xs = floats(12.0f, 501);
  const Tensor x = Tensor::from_vector(xs, {int64_t(xs.size())});
  const Tensor ones = Tensor::from_vector(std::vector<float>(xs.size(), 1.0f), {int64_t(xs.size())});
  const long double k = 0.7978845608028654, c = 0.044715;
  auto e2u = [&](long double v) { return std::exp(-2 * k * (v + c * v * v * v)); };  // e^-2u
  const int64_t gelu_bad =
      misrounded(xs, forge::gelu(x).to_vector<float>(), [&](long double v) { return v / (1 + e2u(v)); });
  const int64_t grad_bad = misrounded(xs, forge::gelu_bwd(x, ones).to_vector<float>(), [&](long double v) {
    const long double e = e2u(v), s = 1 / (1 + e);
    return s + 2 * k * v * (1 + 3 * c * v * v) * s * (e * s);
  });
  const int64_t silu_bad =
      misrounded(xs, forge::silu(x).to_vector<float>(), [](long double v) { return v / (1 + std::exp(-v)); });
  const int64_t allowed = int64_t(xs.size()) / 1000000;
  EXPECT_LE(gelu_bad, allowed) << "of " << xs.size();
  EXPECT_LE(grad_bad, allowed) << "of " << xs.size();
  EXPECT_LE(silu_bad, allowed) << "of " << xs.size();
}

// softmax over [0, d] for ~1M logit differences d: the kernel's steps (max,
// e = float(exp(x - max)), double sum, y = e * float(1 / sum)) with the exp
// taken in long double give the same floats.
TEST(VecMath, SoftmaxExpCorrectlyRounded) {
  const std::vector<float> ds = floats(80.0f, 2003);
  std::vector<float> pairs;
  for (float d : ds) pairs.insert(pairs.end(), {0.0f, d});
  const std::vector<float> p =
      forge::softmax(Tensor::from_vector(pairs, {int64_t(ds.size()), 2})).to_vector<float>();
  std::vector<float> second(ds.size());
  for (size_t i = 0; i < ds.size(); ++i) second[i] = p[2 * i + 1];
  const int64_t bad = misrounded(ds, second, [](long double d) {
    const float mx = std::max(0.0f, float(d));
    const float e0 = float(std::exp((long double)(0.0f - mx))), e1 = float(std::exp((long double)(float(d) - mx)));
    const float inv = float(1.0 / (double(e0) + double(e1)));
    return (long double)(e1 * inv);
  });
  EXPECT_LE(bad, int64_t(ds.size()) / 1000000) << "of " << ds.size();
}

}  // namespace
