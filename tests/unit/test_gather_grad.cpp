// The backward ops of the gather family, checked on the CPU:
// - the head reshapes and the embedding are linear, so their backwards must be
//   exact adjoints: <f(x), y> == <x, f^T(y)> (sums in double);
// - ce_bwd against central finite differences of the cross-entropy loss
//   computed in double precision, and gather_nll against that loss.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "forge/ops.h"

using namespace forge;

namespace {

Tensor rand_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size_t(numel(s)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_vector(v, s);
}

Tensor rand_ids(const Shape& s, int64_t bound, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(size_t(numel(s)));
  for (auto& x : v) x = uint32_t(rng() % uint64_t(bound));
  return Tensor::from_vector(v, s);
}

double dot(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  auto x = a.to_vector<float>(), y = b.to_vector<float>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += double(x[i]) * double(y[i]);
  return s;
}

// Pure permutations: both sides sum the same products in another order, so
// only double rounding separates them.
constexpr double kPermTol = 1e-12;

TEST(GatherGrad, SplitHeadsAdjoint) {
  for (Shape s : {Shape{5, 12}, Shape{3, 7, 24}}) {
    const int64_t h = s.back() == 12 ? 2 : 4;
    Tensor x = rand_tensor(s, 1);
    QKV f = split_heads(x, h);
    Tensor dq = rand_tensor(f.q.shape(), 2), dk = rand_tensor(f.q.shape(), 3), dv = rand_tensor(f.q.shape(), 4);
    double lhs = dot(f.q, dq) + dot(f.k, dk) + dot(f.v, dv);
    EXPECT_NEAR(lhs, dot(x, unsplit_heads(dq, dk, dv)), kPermTol) << shape_str(s);
    // Each third on its own.
    EXPECT_NEAR(dot(f.q, dq), dot(x, unsplit_head(dq, 0)), kPermTol);
    EXPECT_NEAR(dot(f.k, dk), dot(x, unsplit_head(dk, 1)), kPermTol);
    EXPECT_NEAR(dot(f.v, dv), dot(x, unsplit_head(dv, 2)), kPermTol);
  }
}

TEST(GatherGrad, MergeHeadsAdjoint) {
  for (Shape s : {Shape{3, 5, 4}, Shape{2, 3, 7, 5}}) {
    Tensor x = rand_tensor(s, 5);
    Tensor y = merge_heads(x);
    Tensor dy = rand_tensor(y.shape(), 6);
    EXPECT_NEAR(dot(y, dy), dot(x, unmerge_heads(dy, s[s.size() - 3])), kPermTol) << shape_str(s);
  }
}

TEST(GatherGrad, EmbeddingAdjointIsScatterAdd) {
  // <embedding(ids, wte), G> == <wte, scatter_add_rows(0, ids, G)>, with
  // repeated ids. The right side sums repeated rows of G in f32 first: the
  // tolerance is a few f32 roundings of sums of O(1) values.
  for (Shape ids_shape : {Shape{17}, Shape{3, 9}}) {
    const int64_t v = 5, c = 7;
    Tensor ids = rand_ids(ids_shape, v, 7), wte = rand_tensor({v, c}, 8);
    Tensor out = embedding(ids, wte);
    Tensor g = rand_tensor(out.shape(), 9);
    Tensor dwte = Tensor::zeros({v, c});
    scatter_add_rows(dwte, ids, g);
    EXPECT_NEAR(dot(out, g), dot(wte, dwte), 1e-5) << shape_str(ids_shape);
  }
}

// L(z) = scale * sum_r (logsumexp(z_r) - z_r[id_r]), in double.
double ce_loss(const std::vector<double>& z, const std::vector<uint32_t>& ids, int64_t v, double scale) {
  double loss = 0;
  for (size_t r = 0; r < ids.size(); ++r) {
    const double* zr = z.data() + r * size_t(v);
    double mx = zr[0];
    for (int64_t j = 1; j < v; ++j) mx = std::max(mx, zr[j]);
    double sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += std::exp(zr[j] - mx);
    loss += mx + std::log(sum) - zr[ids[r]];
  }
  return scale * loss;
}

TEST(GatherGrad, CeBwdMatchesFiniteDifferences) {
  const int64_t r = 4, v = 7;
  const float scale = 0.25f;
  Tensor logits = rand_tensor({r, v}, 10);
  std::vector<uint32_t> id{3, 0, 3, 6};  // a repeated target
  Tensor ids = Tensor::from_vector(id, {r});
  Tensor probs = softmax(logits);
  auto grad = ce_bwd(probs, ids, scale).to_vector<float>();

  auto zf = logits.to_vector<float>();
  std::vector<double> z(zf.begin(), zf.end());
  const double h = 1e-5;
  for (size_t i = 0; i < z.size(); ++i) {
    double keep = z[i];
    z[i] = keep + h;
    double up = ce_loss(z, id, v, scale);
    z[i] = keep - h;
    double down = ce_loss(z, id, v, scale);
    z[i] = keep;
    // Central differences in double are good to ~1e-10 here; the f32 softmax
    // and ce_bwd to a few f32 ulps of values below 1.
    EXPECT_NEAR(grad[i], (up - down) / (2 * h), 2e-7) << "logit " << i;
  }
  // And the loss itself: sum of gather_nll(softmax(z)) == L(z) / scale.
  auto nll = gather_nll(probs, ids).to_vector<float>();
  double total = 0;
  for (float x : nll) total += x;
  EXPECT_NEAR(total, ce_loss(z, id, v, 1.0), 1e-5);
}

}  // namespace
