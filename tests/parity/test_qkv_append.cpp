// qkv_append: on every device, q and the caches equal split_heads,
// merge_heads and kv_append on the CPU (exact: copies), for one sequence
// (whose cache slots the kernel binds from an aligned offset) and several, at
// odd widths; errors name the op.
#include "parity.h"

namespace forge::testing {
namespace {

struct Case {
  int64_t B, T, nh, hd, cap, at;
};

TEST(QkvAppendParity, EqualsSplitHeadsAndKvAppend) {
  uint32_t seed = 1200;
  const std::vector<Case> cases = {{1, 1, 2, 16, 8, 0}, {1, 1, 3, 5, 9, 7}, {1, 3, 2, 3, 20, 17},
                                   {2, 1, 2, 16, 8, 5}, {3, 4, 1, 7, 6, 2}};
  for (const Device& dev : test_devices()) {
    for (const Case& c : cases) {
      SCOPED_TRACE(dev.name() + " B " + std::to_string(c.B) + " T " + std::to_string(c.T) + " at " +
                   std::to_string(c.at));
      const int64_t C = c.nh * c.hd;
      const Tensor qkv = random_tensor({c.B, c.T, 3 * C}, seed++);
      const Tensor k0 = random_tensor({c.B, c.cap, c.nh, c.hd}, seed++), v0 = random_tensor({c.B, c.cap, c.nh, c.hd}, seed++);
      // The plain ops on the CPU.
      const QKV p = split_heads(qkv, c.nh);
      auto tokens = [&](const Tensor& t) { return merge_heads(t).reshape({c.B, 1, c.T, C}); };
      Tensor kw = k0.clone().reshape({c.B, 1, c.cap, C}), vw = v0.clone().reshape({c.B, 1, c.cap, C});
      kv_append(kw, tokens(p.k), c.at);
      kv_append(vw, tokens(p.v), c.at);
      const Tensor qw = merge_heads(p.q).reshape({c.B, c.T, c.nh, c.hd});

      Tensor K = k0.to(dev), V = v0.to(dev);
      const Tensor q = qkv_append(qkv.to(dev), K, V, c.at);
      EXPECT_EQ(q.shape(), qw.shape());
      EXPECT_EQ(q.to_f32(), qw.to_f32()) << "q";
      EXPECT_EQ(K.to_f32(), kw.to_f32()) << "k cache";
      EXPECT_EQ(V.to_f32(), vw.to_f32()) << "v cache";
    }
  }
}

TEST(QkvAppendParity, BadShapesAndOverflowsAreRefused) {
  Tensor k = Tensor::zeros({1, 4, 2, 3}), v = Tensor::zeros({1, 4, 2, 3});
  expect_error<ValueError>("qkv_append", [&] { qkv_append(Tensor::zeros({1, 2, 18}), k, v, 3); }, "capacity");
  expect_error<ShapeError>("qkv_append", [&] { qkv_append(Tensor::zeros({1, 2, 17}), k, v, 0); }, "3 * nh * hd");
  expect_error<ShapeError>("qkv_append", [&] { qkv_append(Tensor::zeros({2, 18}), k, v, 0); }, "[B, T, 3C]");
  Tensor v_short = Tensor::zeros({1, 3, 2, 3});
  expect_error<ShapeError>("qkv_append", [&] { qkv_append(Tensor::zeros({1, 1, 18}), k, v_short, 0); }, "v_cache");
}

}  // namespace
}  // namespace forge::testing
