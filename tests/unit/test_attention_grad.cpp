// flash_attention_v2_backward on the CPU against central finite differences
// of a naive double-precision attention written here, for small shapes with
// GQA, causal masking, a KV-cache offset, an additive mask, a sliding window
// and dropout at a fixed seed. (GPU backward vs CPU backward: the parity
// suite, tests/parity/test_attention_ops.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "forge/ops.h"

namespace forge {
namespace {

struct Case {
  const char* name;
  int64_t batch, seq_q, seq_k, heads, kv_heads, dim;
  AttentionOptions o;
  bool mask = false;  // [batch, 1, seq_q, seq_k] with some -inf entries
};

struct Inputs {
  std::vector<double> q, k, v, mask, keep, g;  // keep: dropout factors [B, H, Sq, Sk] (empty = none)
};

// sum(out * g) for the naive attention of `in` (all double).
double loss(const Case& c, const Inputs& in) {
  const int64_t D = c.dim, group = c.heads / c.kv_heads;
  const double scale = c.o.scale > 0 ? c.o.scale : 1.0 / std::sqrt(double(D));
  double total = 0;
  std::vector<double> s(size_t(c.seq_k));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.seq_q; ++i) {
        const int64_t pos = c.o.kv_offset + i, g = h / group;
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.seq_k; ++j) {
          double x = -INFINITY;
          bool vis = (!c.o.causal || j <= pos) && (c.o.window == 0 || pos - j < c.o.window);
          if (vis) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d)
              dot += in.q[size_t(((b * c.seq_q + i) * c.heads + h) * D + d)] *
                     in.k[size_t(((b * c.seq_k + j) * c.kv_heads + g) * D + d)];
            x = scale * dot;
            if (c.mask) x += in.mask[size_t((b * c.seq_q + i) * c.seq_k + j)];
            if (!(x > -1e30)) x = -INFINITY;
          }
          s[size_t(j)] = x;
          mx = std::max(mx, x);
        }
        if (mx == -INFINITY) continue;
        double sum = 0;
        for (int64_t j = 0; j < c.seq_k; ++j) sum += std::exp(s[size_t(j)] - mx);
        for (int64_t j = 0; j < c.seq_k; ++j) {
          double w = std::exp(s[size_t(j)] - mx) / sum;
          if (!in.keep.empty()) w *= in.keep[size_t(((b * c.heads + h) * c.seq_q + i) * c.seq_k + j)];
          for (int64_t d = 0; d < D; ++d)
            total += w * in.v[size_t(((b * c.seq_k + j) * c.kv_heads + g) * D + d)] *
                     in.g[size_t(((b * c.seq_q + i) * c.heads + h) * D + d)];
        }
      }
  return total;
}

std::vector<double> random_doubles(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = double(float(dist(rng)));  // representable in f32
  return v;
}

Tensor to_tensor(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
}

void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  Inputs in;
  in.q = random_doubles(size_t(c.batch * c.seq_q * c.heads * c.dim), 1);
  in.k = random_doubles(size_t(c.batch * c.seq_k * c.kv_heads * c.dim), 2);
  in.v = random_doubles(size_t(c.batch * c.seq_k * c.kv_heads * c.dim), 3);
  in.g = random_doubles(in.q.size(), 4);
  Shape qs{c.batch, c.seq_q, c.heads, c.dim}, ks{c.batch, c.seq_k, c.kv_heads, c.dim};
  Shape ms{c.batch, 1, c.seq_q, c.seq_k};
  Tensor mask;
  if (c.mask) {
    in.mask = random_doubles(size_t(numel(ms)), 5);
    for (size_t e = 0; e < in.mask.size(); e += 3) in.mask[e] = -INFINITY;
    mask = to_tensor(in.mask, ms);
  }
  if (c.o.dropout_p > 0) {
    // The dropout factors of the probability tensor are forge::dropout's.
    Tensor ones = Tensor::from_vector(std::vector<float>(size_t(c.batch * c.heads * c.seq_q * c.seq_k), 1.0f),
                                      {c.batch, c.heads, c.seq_q, c.seq_k});
    for (float f : dropout(ones, c.o.dropout_p, c.o.dropout_seed).to_vector<float>()) in.keep.push_back(f);
  }
  Tensor q = to_tensor(in.q, qs), k = to_tensor(in.k, ks), v = to_tensor(in.v, ks);
  const Tensor* mp = c.mask ? &mask : nullptr;
  Tensor out = flash_attention_v2(q, k, v, c.o, mp);
  AttentionGrads grads = flash_attention_v2_backward(q, k, v, out, to_tensor(in.g, qs), c.o, mp);

  const double h = 1e-5;
  // |analytic - numeric| <= 2e-4 + 2e-3 |numeric| for every element.
  auto check = [&](std::vector<double>& x, const Tensor& grad, const char* what) {
    std::vector<float> got = grad.to_vector<float>();
    for (size_t e = 0; e < x.size(); ++e) {
      double saved = x[e];
      x[e] = saved + h;
      double up = loss(c, in);
      x[e] = saved - h;
      double down = loss(c, in);
      x[e] = saved;
      double want = (up - down) / (2 * h);
      ASSERT_NEAR(got[e], want, 2e-4 + 2e-3 * std::fabs(want)) << what << " element " << e;
    }
  };
  check(in.q, grads.grad_q, "grad_q");
  check(in.k, grads.grad_k, "grad_k");
  check(in.v, grads.grad_v, "grad_v");
}

TEST(AttentionGrad, PlainMultiHead) { check_case({"plain", 2, 3, 4, 2, 2, 5, {}}); }

TEST(AttentionGrad, GqaCausal) {
  AttentionOptions o;
  o.causal = true;
  check_case({"gqa causal", 1, 5, 5, 4, 2, 4, o});
}

TEST(AttentionGrad, MqaKvOffsetWindowMask) {
  AttentionOptions o;
  o.causal = true;
  o.kv_offset = 3;
  o.window = 4;
  check_case({"mqa offset window mask", 2, 3, 6, 3, 1, 4, o, true});
}

TEST(AttentionGrad, DropoutFixedSeed) {
  AttentionOptions o;
  o.dropout_p = 0.3f;
  o.dropout_seed = 1234;
  o.scale = 0.7f;
  check_case({"dropout", 1, 4, 6, 2, 1, 3, o, true});
}

TEST(AttentionGrad, FullyMaskedRowHasZeroGradient) {
  Tensor q = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 1, 2});
  Tensor k = Tensor::from_vector(std::vector<float>{1, -1, 0.5f, 2}, {1, 2, 1, 2});
  Tensor mask = Tensor::from_vector(std::vector<float>{-INFINITY, -INFINITY, 0, 0}, {1, 1, 2, 2});
  Tensor out = flash_attention_v2(q, k, k, {}, &mask);
  std::vector<float> o = out.to_vector<float>();
  EXPECT_EQ(o[0], 0.0f);
  EXPECT_EQ(o[1], 0.0f);
  Tensor g = Tensor::from_vector(std::vector<float>{1, 1, 1, 1}, {1, 2, 1, 2});
  AttentionGrads grads = flash_attention_v2_backward(q, k, k, out, g, {}, &mask);
  std::vector<float> gq = grads.grad_q.to_vector<float>();
  EXPECT_EQ(gq[0], 0.0f);
  EXPECT_EQ(gq[1], 0.0f);
  for (float x : gq) EXPECT_FALSE(std::isnan(x));
}

}  // namespace
}  // namespace forge
