// The CPU decode kernels of quantized_matmul (x of 1..7 rows): the AVX-512
// VNNI integer kernel (called directly; skipped on a CPU without it) and the
// op's default path, against a double-precision x @ W^T of the dequantized
// W, on odd shapes: packed rows that end inside a 64-byte chunk, row counts
// that are no multiple of anything, every bits / group size / scale dtype,
// groups of mixed magnitude, a zero group and a NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cpu/quant_decode.h"
#include "forge/dtype.h"
#include "forge/ops.h"
#include "forge/ops/quant.h"
#include "forge/tensor.h"

using namespace forge;

namespace {

struct Case {
  int bits, group;
  int64_t out, in, m;
  DType scale_dtype;
};

std::string name(const Case& c) {
  return std::to_string(c.bits) + " bits, group " + std::to_string(c.group) + ", W [" + std::to_string(c.out) + ", " +
         std::to_string(c.in) + "], m " + std::to_string(c.m) + ", " + dtype_name(c.scale_dtype);
}

Tensor scales_tensor(const std::vector<float>& v, const Shape& s, DType dt) {
  if (dt == DType::F32) return Tensor::from_vector(v, s);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = dt == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
  return Tensor::from_data(h.data(), s, dt);
}

struct Problem {
  Tensor w, scales, biases, x, bias;
  std::vector<float> dense;  // [out, in], from affine_dequantize
  QuantPlan plan;
};

// Random words, scales in [0.001, 0.03], biases in [-1, 1]; x row r scaled
// per group by 10^(g % 5 - 2) (a group of 0.01s beside one of 100s), one
// group of zeros when there are several.
Problem make_problem(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), sc(0.001f, 0.03f);
  const int64_t words = c.in * c.bits / 32, groups = c.in / c.group;
  std::vector<uint32_t> w(size_t(c.out * words));
  for (auto& v : w) v = rng();
  std::vector<float> s(size_t(c.out * groups)), b(s.size()), x(size_t(c.m * c.in)), bias(size_t(c.out));
  for (auto& v : s) v = sc(rng);
  for (auto& v : b) v = unit(rng);
  for (auto& v : bias) v = unit(rng);
  for (int64_t r = 0; r < c.m; ++r)
    for (int64_t i = 0; i < c.in; ++i) {
      const int64_t g = i / c.group;
      x[size_t(r * c.in + i)] = groups > 1 && g == 1 ? 0.0f : unit(rng) * std::pow(10.0f, float(g % 5 - 2));
    }
  Problem p;
  p.w = Tensor::from_vector(w, {c.out, words});
  p.scales = scales_tensor(s, {c.out, groups}, c.scale_dtype);
  p.biases = scales_tensor(b, {c.out, groups}, c.scale_dtype);
  p.x = Tensor::from_vector(x, {c.m, c.in});
  p.bias = Tensor::from_vector(bias, {c.out});
  p.dense = affine_dequantize(p.w, p.scales, p.biases, c.bits, c.group).to_vector<float>();
  p.plan.bits = c.bits;
  p.plan.group_size = c.group;
  p.plan.out = c.out;
  p.plan.in = c.in;
  p.plan.words = words;
  p.plan.groups = groups;
  p.plan.scale_kind = c.scale_dtype == DType::F32    ? ScaleKind::F32
                      : c.scale_dtype == DType::BF16 ? ScaleKind::BF16
                                                     : ScaleKind::F16;
  p.plan.scale_bytes = c.scale_dtype == DType::F32 ? 4 : 2;
  return p;
}

// got [m, out] against x @ dense^T + bias in double. Bound per output:
// 1e-6 * sum_i |w_i| * max|x| of i's group + 1e-6 * |bias|: x rounded to
// 24 bits costs at most 6e-8 of its group's max per element, the f32 sums
// a few 1e-7 of sum |w_i x_i|. x rounded to 16 bits (1.5e-5) would fail it.
void expect_close(const Case& c, const Problem& p, const std::vector<float>& got, const std::string& what) {
  const std::vector<float> x = p.x.to_vector<float>(), bias = p.bias.to_vector<float>();
  int bad = 0;
  for (int64_t r = 0; r < c.m; ++r) {
    std::vector<double> gmax(size_t(c.in / c.group), 0.0);
    for (int64_t i = 0; i < c.in; ++i)
      gmax[size_t(i / c.group)] = std::max(gmax[size_t(i / c.group)], double(std::fabs(x[size_t(r * c.in + i)])));
    for (int64_t o = 0; o < c.out; ++o) {
      double want = bias[size_t(o)], scale = 0;
      for (int64_t i = 0; i < c.in; ++i) {
        const double w = p.dense[size_t(o * c.in + i)];
        want += w * x[size_t(r * c.in + i)];
        scale += std::fabs(w) * gmax[size_t(i / c.group)];
      }
      const double g = got[size_t(r * c.out + o)], tol = 1e-6 * scale + 1e-6 * std::fabs(bias[size_t(o)]);
      if (!(std::fabs(g - want) <= tol) && bad++ < 3)
        ADD_FAILURE() << what << ", " << name(c) << ": y[" << r << ", " << o << "] = " << g << ", want " << want
                      << " (tolerance " << tol << ")";
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const DType dts[] = {DType::BF16, DType::F16, DType::F32};
  int k = 0;
  for (int bits : {2, 4, 8})
    for (int group : {32, 64, 128})
      // in: one group, three (a packed row ending inside a 64-byte chunk
      // for most), and 24 groups.
      for (int64_t mult : {1, 3, 24}) {
        const int64_t m = 1 + (k % 3) * 3;  // 1, 4, 7
        out.push_back({bits, group, 17 + 16 * (k % 2), group * mult, m, dts[k % 3]});
        ++k;
      }
  return out;
}

}  // namespace

TEST(QuantDecode, VnniKernelAgainstDequantized) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    Problem p = make_problem(c, seed++);
    std::vector<float> y(size_t(c.m * c.out), NAN);
    const std::vector<float> x = p.x.to_vector<float>(), bias = p.bias.to_vector<float>();
    const cpu::QmmArgs a{x.data(),
                         p.w.data<uint32_t>(),
                         static_cast<const unsigned char*>(p.scales.raw_data()),
                         static_cast<const unsigned char*>(p.biases.raw_data()),
                         bias.data(),
                         &p.plan,
                         c.m,
                         y.data()};
    if (!cpu::quantized_matvec_vnni(a)) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
    expect_close(c, p, y, "VNNI kernel");
  }
}

TEST(QuantDecode, OpAgainstDequantized) {
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    Problem p = make_problem(c, seed++);
    Tensor y = quantized_matmul(p.x, p.w, p.scales, p.biases, c.bits, c.group, &p.bias);
    expect_close(c, p, y.to_vector<float>(), "quantized_matmul");
  }
}

// A NaN or an infinity in x gives NaN in every output of its row, as the
// dense route does, and leaves the other rows alone.
TEST(QuantDecode, NonFiniteInputPropagates) {
  Case c{8, 64, 5, 128, 2, DType::BF16};
  Problem p = make_problem(c, 7);
  for (float bad : {NAN, INFINITY}) {
    std::vector<float> x = p.x.to_vector<float>();
    x[70] = bad;  // row 0, group 1
    Tensor y = quantized_matmul(Tensor::from_vector(x, {2, 128}), p.w, p.scales, p.biases, 8, 64);
    std::vector<float> v = y.to_vector<float>();
    for (int o = 0; o < 5; ++o) {
      EXPECT_TRUE(std::isnan(v[size_t(o)]) || std::isinf(v[size_t(o)])) << "row 0, output " << o << ": " << v[o];
      EXPECT_TRUE(std::isfinite(v[size_t(5 + o)])) << "row 1, output " << o;
    }
  }
}
