// qkv_append: on every device, q and the caches equal split_heads,
// merge_heads and kv_append on the CPU (exact: copies), for one sequence
// (whose cache slots the kernel binds from an aligned offset) and several, at
// odd widths, and rows at slots of their own; errors name the op.
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

// The product form (GPT-2's c_attn in a decode step): one token's x @ w
// (+ bias), x normed as read, split and appended, against matmul and
// qkv_append on the CPU; every slot of the caches compared, so a write to
// the wrong slot shows. k > 256 takes the fused kernel on WebGPU where the
// slot is at a binding offset (C = 320: every slot; C = 268: slot 0 only).
TEST(QkvAppendParity, ProductFormEqualsMatmulThenAppend) {
  uint32_t seed = 1300;
  struct ProductCase {
    int64_t nh, hd, cap, at;
    int norm;  // 0 none, 1 RMS, 2 LayerNorm with a bias
    bool bias;
  };
  const std::vector<ProductCase> cases = {{5, 64, 4, 0, 0, true},  {5, 64, 4, 3, 2, true},  {5, 64, 6, 1, 1, false},
                                          {4, 67, 3, 0, 2, true},  {4, 67, 3, 1, 2, true}};
  for (const Device& dev : test_devices()) {
    for (const ProductCase& c : cases) {
      const int64_t C = c.nh * c.hd;
      SCOPED_TRACE(dev.name() + " C " + std::to_string(C) + " at " + std::to_string(c.at) + " norm " +
                   std::to_string(c.norm));
      const Tensor x = random_tensor({1, C}, seed++), w = random_tensor({C, 3 * C}, seed++, -0.1f, 0.1f);
      const Tensor bias = random_tensor({3 * C}, seed++), nw = random_tensor({C}, seed++, 0.5f, 1.5f),
                   nb = random_tensor({C}, seed++);
      const Tensor k0 = random_tensor({1, c.cap, c.nh, c.hd}, seed++), v0 = random_tensor({1, c.cap, c.nh, c.hd}, seed++);
      auto run = [&](const Device& d, Tensor& K, Tensor& V) {
        const Tensor dnw = nw.to(d), dnb = nb.to(d), dbias = bias.to(d);
        const RowNorm norm{&dnw, 1e-5f, c.norm == 2, c.norm == 2 ? &dnb : nullptr};
        MatmulOptions o;
        o.bias = c.bias ? &dbias : nullptr;
        o.norm = c.norm ? &norm : nullptr;
        return qkv_append(x.to(d), w.to(d), o, K, V, c.at);
      };
      // The CPU composes matmul and qkv_append.
      Tensor kw = k0.clone(), vw = v0.clone();
      const Tensor qw = run(Device::cpu(), kw, vw);
      Tensor K = k0.to(dev), V = v0.to(dev);
      const Tensor q = run(dev, K, V);
      EXPECT_EQ(q.shape(), (Shape{1, 1, c.nh, c.hd}));
      EXPECT_TRUE(all_close(q, qw, 2e-5, 1e-4)) << "q";
      EXPECT_TRUE(all_close(K, kw, 2e-5, 1e-4)) << "k cache";
      EXPECT_TRUE(all_close(V, vw, 2e-5, 1e-4)) << "v cache";
    }
  }
}

TEST(QkvAppendParity, ProductFormRefusesWhatItCannotTake) {
  Tensor k = Tensor::zeros({1, 4, 2, 3}), v = Tensor::zeros({1, 4, 2, 3});
  const Tensor x = Tensor::zeros({1, 6}), w = Tensor::zeros({6, 18});
  MatmulOptions gelu;
  gelu.gelu = true;
  expect_error<ValueError>("qkv_append", [&] { qkv_append(x, w, gelu, k, v, 0); }, "bias and a row norm only");
  expect_error<ValueError>("qkv_append", [&] { qkv_append(x, w, {}, k, v, 4); }, "capacity");
  expect_error<ShapeError>("qkv_append", [&] { qkv_append(x, Tensor::zeros({6, 17}), {}, k, v, 0); }, "3 * nh * hd");
  expect_error<ShapeError>("matmul", [&] { qkv_append(Tensor::zeros({1, 5}), w, {}, k, v, 0); }, "inner dims");
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    Tensor K = k.to(dev), V = v.to(dev);
    const Tensor bad_bias = Tensor::zeros({17}, DType::F32, dev);
    MatmulOptions o;
    o.bias = &bad_bias;
    expect_error<ShapeError>("matmul", [&] { qkv_append(x.to(dev), w.to(dev), o, K, V, 0); }, "bias");
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

// The rows form (continuous batching): row i's token to row i of the caches
// at its own slot, against split_heads and kv_append_rows on the CPU (exact);
// rows past n and every other slot stay as they were.
TEST(QkvAppendParity, RowsFormWritesEachRowAtItsSlot) {
  struct RowsCase {
    int64_t rows, nh, hd, cap;
    std::vector<int64_t> at;  // one slot per row taking part
  };
  const std::vector<RowsCase> cases = {{1, 2, 16, 8, {7}}, {4, 3, 5, 9, {0, 8, 3}}, {3, 1, 4, 6, {5, 5, 0}},
                                       {2, 2, 3, 5, {2, 4}}};
  uint32_t seed = 1300;
  for (const Device& dev : test_devices()) {
    for (const RowsCase& c : cases) {
      const int64_t n = int64_t(c.at.size()), C = c.nh * c.hd;
      SCOPED_TRACE(dev.name() + " n " + std::to_string(n) + " of " + std::to_string(c.rows) + " rows");
      const Tensor qkv = random_tensor({n, 1, 3 * C}, seed++);
      const Tensor k0 = random_tensor({c.rows, c.cap, c.nh, c.hd}, seed++), v0 = random_tensor({c.rows, c.cap, c.nh, c.hd}, seed++);
      const QKV p = split_heads(qkv, c.nh);  // each [n, nh, 1, hd]
      Tensor kw = k0.clone(), vw = v0.clone();
      kv_append_rows(kw, p.k.reshape({n, 1, c.nh, c.hd}), 0, c.at);
      kv_append_rows(vw, p.v.reshape({n, 1, c.nh, c.hd}), 0, c.at);

      Tensor K = k0.to(dev), V = v0.to(dev);
      const Tensor q = qkv_append_rows(qkv.to(dev), K, V, c.at);
      EXPECT_EQ(q.shape(), (Shape{n, 1, c.nh, c.hd}));
      EXPECT_EQ(q.to_f32(), p.q.reshape({n, 1, c.nh, c.hd}).to_f32()) << "q";
      EXPECT_EQ(K.to_f32(), kw.to_f32()) << "k cache";
      EXPECT_EQ(V.to_f32(), vw.to_f32()) << "v cache";
    }
  }
}

TEST(QkvAppendParity, RowsFormRefusesBadSlotsAndShapes) {
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    Tensor k = Tensor::zeros({3, 4, 2, 3}, DType::F32, dev), v = Tensor::zeros({3, 4, 2, 3}, DType::F32, dev);
    const Tensor qkv = Tensor::zeros({2, 1, 18}, DType::F32, dev);
    expect_error<ValueError>("qkv_append_rows", [&] { qkv_append_rows(qkv, k, v, {0}); }, "1 positions for 2 rows");
    expect_error<ValueError>("qkv_append_rows", [&] { qkv_append_rows(qkv, k, v, {0, 4}); },
                             "row 1 position 4 outside the cache capacity 4");
    expect_error<ValueError>("qkv_append_rows", [&] { qkv_append_rows(qkv, k, v, {-1, 0}); }, "position -1");
    expect_error<ShapeError>("qkv_append_rows",
                             [&] { qkv_append_rows(Tensor::zeros({2, 2, 18}, DType::F32, dev), k, v, {0, 0}); },
                             "one token of each row");
    expect_error<ShapeError>("qkv_append_rows",
                             [&] { qkv_append_rows(Tensor::zeros({4, 1, 18}, DType::F32, dev), k, v, {0, 0, 0, 0}); },
                             "at least n rows");
  }
}

}  // namespace
}  // namespace forge::testing
