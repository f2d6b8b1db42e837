// Parity, hand-computed values, validation and binding-limit splitting for
// the gather family (forge/ops/gather.h).
#include <limits>

#include "parity/parity.h"

using namespace forge;
using namespace forge::testing;

namespace {

Tensor ids_tensor(const std::vector<uint32_t>& v, const Shape& s, const Device& d = Device::cpu()) {
  return Tensor::from_vector<uint32_t>(v, s, d);
}

Tensor random_ids(const Shape& s, int64_t bound, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  std::vector<uint32_t> v(size_t(numel(s)));
  for (auto& x : v) x = uint32_t(dist(rng));
  return ids_tensor(v, s);
}

// Runs `fn`, expecting exception E whose message names `op` (as "[op]").
template <class E, class Fn>
::testing::AssertionResult throws_named(Fn fn, const std::string& op) {
  try {
    fn();
  } catch (const E& e) {
    if (std::string(e.what()).find("[" + op + "]") == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks [" << op << "]: " << e.what();
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// Lowers the device's binding limit for one scope.
struct BindingLimit {
  explicit BindingLimit(uint64_t bytes) { gpu_device().runtime().set_binding_limit_for_testing(bytes); }
  ~BindingLimit() { gpu_device().runtime().set_binding_limit_for_testing(0); }
};

// Softmax rows of random logits: valid probabilities.
Tensor random_probs(const Shape& s, uint32_t seed) { return softmax(random_tensor(s, seed, -4.0f, 4.0f)); }

// ---- embedding --------------------------------------------------------------

struct EmbedCase {
  Shape ids;
  int64_t v, c, p;  // p = 0: no wpe
  int64_t pos;
};

const std::vector<EmbedCase> kEmbedCases = {
    {{1}, 1, 1, 1, 0},      {{3}, 17, 3, 5, 2},       {{17}, 129, 17, 20, 3}, {{129}, 3, 129, 0, 0},
    {{2, 17}, 129, 17, 17, 0}, {{3, 1}, 17, 129, 4, 3}, {{2, 3}, 3, 1, 0, 7},
};

TEST(Parity, GatherEmbedding) {
  uint32_t seed = 1000;
  for (const auto& c : kEmbedCases) {
    Tensor ids = random_ids(c.ids, c.v, seed++);
    Tensor wte = random_tensor({c.v, c.c}, seed++);
    Tensor wpe = c.p ? random_tensor({c.p, c.c}, seed++) : Tensor();
    // A pure gather plus one f32 addition: exact.
    EXPECT_TRUE(cpu_gpu_parity({ids, wte, wpe.defined() ? wpe : wte},
                               [&](auto& in) { return embedding(in[0], in[1], c.p ? &in[2] : nullptr, c.pos); }, 0, 0))
        << shape_str(c.ids) << " V " << c.v << " C " << c.c;
    // i32 ids, and ids kept on the CPU with the tables on the GPU.
    std::vector<uint32_t> u = ids.to_vector<uint32_t>();
    Tensor ids32 = Tensor::from_vector<int32_t>(std::vector<int32_t>(u.begin(), u.end()), c.ids);
    Tensor want = embedding(ids, wte, c.p ? &wpe : nullptr, c.pos);
    Tensor gwte = wte.to(gpu_device()), gwpe = c.p ? wpe.to(gpu_device()) : Tensor();
    EXPECT_TRUE(all_close(embedding(ids32, gwte, &gwpe, c.pos), want, 0, 0));
    EXPECT_TRUE(all_close(embedding(ids32.to(gpu_device()), gwte, &gwpe, c.pos), want, 0, 0));
  }
}

TEST(Values, GatherEmbeddingSmall) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor wte = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}, d);
    Tensor wpe = Tensor::from_vector<float>({10, 20, 30, 40, 50, 60}, {3, 2}, d);
    EXPECT_EQ(embedding(ids_tensor({2, 0}, {2}, d), wte, &wpe, 1).to_vector<float>(),
              (std::vector<float>{35, 46, 51, 62}))
        << d.name();
    // Each batch row restarts at pos.
    EXPECT_EQ(embedding(ids_tensor({2, 0, 1, 1}, {2, 2}, d), wte, &wpe, 0).to_vector<float>(),
              (std::vector<float>{15, 26, 31, 42, 13, 24, 33, 44}))
        << d.name();
    Tensor none;
    EXPECT_EQ(embedding(ids_tensor({1, 2, 1}, {3}, d), wte, &none, 5).to_vector<float>(),
              (std::vector<float>{3, 4, 5, 6, 3, 4}))
        << d.name();
  }
}

TEST(Validation, GatherEmbedding) {
  Tensor wte = Tensor::zeros({5, 3}), wpe = Tensor::zeros({4, 3});
  const std::string op = "embedding";
  EXPECT_TRUE(throws_named<ValueError>([&] { embedding(ids_tensor({0, 1, 2}, {3}), wte, &wpe, 2); }, op));  // 2+3 > 4
  EXPECT_TRUE(throws_named<ValueError>([&] { embedding(ids_tensor({0, 5}, {2}), wte, &wpe); }, op));        // id 5
  EXPECT_TRUE(throws_named<ValueError>(
      [&] { embedding(Tensor::from_vector<int32_t>({1, -1}, {2}), wte); }, op));  // negative i32 id
  EXPECT_TRUE(throws_named<ValueError>([&] { embedding(ids_tensor({0}, {1}), wte, &wpe, -1); }, op));
  EXPECT_TRUE(throws_named<DTypeError>([&] { embedding(Tensor::zeros({2}), wte); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { embedding(ids_tensor({0}, {1, 1, 1}), wte); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { embedding(ids_tensor({0}, {1}), Tensor::zeros({5})); }, op));
  Tensor narrow = Tensor::zeros({4, 2});
  EXPECT_TRUE(throws_named<ShapeError>([&] { embedding(ids_tensor({0}, {1}), wte, &narrow); }, op));
  Tensor gwpe = wpe.to(gpu_device());
  EXPECT_TRUE(throws_named<DeviceError>([&] { embedding(ids_tensor({0}, {1}), wte, &gwpe); }, op));
  // Ids on the CPU with tables on the GPU are still range checked.
  Tensor gwte = wte.to(gpu_device());
  EXPECT_TRUE(throws_named<ValueError>([&] { embedding(ids_tensor({7}, {1}), gwte, &gwpe); }, op));
  // Ids on the GPU with tables on the CPU: a device mismatch.
  EXPECT_TRUE(throws_named<DeviceError>([&] { embedding(ids_tensor({0}, {1}, gpu_device()), wte); }, op));

  std::vector<Tensor> chunks{Tensor::zeros({2, 3}), Tensor::zeros({1, 3}), Tensor::zeros({1, 3})};
  const std::string opc = "embedding_chunked";
  EXPECT_TRUE(throws_named<ShapeError>([&] { embedding_chunked(ids_tensor({0}, {1}), chunks, 2); }, opc));
  EXPECT_TRUE(throws_named<ShapeError>([&] { embedding_chunked(ids_tensor({0}, {1}), {}, 2); }, opc));
  EXPECT_TRUE(throws_named<ValueError>([&] { embedding_chunked(ids_tensor({0}, {1}), {wte}, 0); }, opc));
  EXPECT_TRUE(throws_named<ValueError>(
      [&] { embedding_chunked(ids_tensor({3}, {1}), {Tensor::zeros({2, 3}), Tensor::zeros({1, 3})}, 2); }, opc));
}

// Documented: an out-of-range id resident on the GPU yields a NaN row; the
// other rows are unaffected.
TEST(Values, GatherEmbeddingBadGpuIdGivesNanRow) {
  Tensor wte = random_tensor({5, 3}, 1).to(gpu_device());
  Tensor wpe = random_tensor({4, 3}, 2).to(gpu_device());
  auto got = embedding(ids_tensor({1, 9, 4}, {3}, gpu_device()), wte, &wpe, 0).to_vector<float>();
  auto want = embedding(ids_tensor({1, 0, 4}, {3}), wte.to(Device::cpu()), nullptr, 0);
  auto pe = wpe.to_vector<float>();
  auto w = want.to_vector<float>();
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(got[size_t(j)], w[size_t(j)] + pe[size_t(j)]);
    EXPECT_TRUE(std::isnan(got[size_t(3 + j)]));
    EXPECT_EQ(got[size_t(6 + j)], w[size_t(6 + j)] + pe[size_t(6 + j)]);
  }
}

TEST(Chunked, EmbeddingUnderLoweredBindingLimit) {
  struct Case {
    uint64_t limit;
    Shape ids;
    int64_t v, c, p, pos;
  };
  // C = 16: 64-byte rows (chunks of any row count); C = 17: 68-byte rows
  // (device chunks start at multiples of 64 rows).
  std::vector<Case> cases = {{4096, {3, 40}, 300, 16, 50, 7}, {8192, {17}, 300, 17, 20, 3}};
  uint32_t seed = 1100;
  for (const auto& c : cases) {
    BindingLimit limit(c.limit);
    Tensor ids = random_ids(c.ids, c.v, seed++);
    ids.data<uint32_t>()[0] = uint32_t(c.v - 1);  // the last row of the last chunk
    Tensor wte = random_tensor({c.v, c.c}, seed++), wpe = random_tensor({c.p, c.c}, seed++);
    Tensor want = embedding(ids, wte, &wpe, c.pos);
    Tensor gwte = wte.to(gpu_device()), gwpe = wpe.to(gpu_device());

    // One buffer over the limit: the op gathers from aligned row views.
    EXPECT_TRUE(all_close(embedding(ids.to(gpu_device()), gwte, &gwpe, c.pos), want, 0, 0));
    auto views = split_rows_for_binding(gwte, gpu_device());
    EXPECT_GT(views.size(), 1u);
    for (const auto& v : views) EXPECT_LE(v.nbytes(), c.limit);

    // A host table split for the device, uploaded chunk by chunk.
    auto host_chunks = split_rows_for_binding(wte, gpu_device());
    ASSERT_GT(host_chunks.size(), 1u);
    std::vector<Tensor> chunks;
    for (const auto& h : host_chunks) {
      EXPECT_LE(h.nbytes(), c.limit);
      chunks.push_back(h.to(gpu_device()));
    }
    int64_t rows = chunks[0].dim(0);
    EXPECT_TRUE(all_close(embedding_chunked(ids.to(gpu_device()), chunks, rows, &gwpe, c.pos), want, 0, 0));
    EXPECT_TRUE(all_close(embedding_chunked(ids, host_chunks, rows, &wpe, c.pos), want, 0, 0));
  }
}

TEST(Chunked, EmbeddingWpeOverBindingLimit) {
  struct Case {
    Shape ids;
    int64_t v, c, p, pos;
  };
  // wpe over the 4 KiB limit: [300, 16] with T = 40 binds the rows used
  // ([pos, pos + T)); [300, 17] with T = 100 (6800 bytes of positions) gathers
  // in runs within one sequence, as do T = 200 ([400, 6]) and T = 150 ([160, 9]).
  const uint64_t limit = 4096;
  BindingLimit bound(limit);
  std::vector<Case> cases = {{{3, 40}, 300, 16, 300, 200}, {{3, 100}, 50, 17, 300, 150},
                             {{200}, 50, 6, 400, 13}, {{2, 150}, 7, 9, 160, 10}};
  uint32_t seed = 1150;
  for (const auto& c : cases) {
    Tensor ids = random_ids(c.ids, c.v, seed++);
    Tensor wte = random_tensor({c.v, c.c}, seed++), wpe = random_tensor({c.p, c.c}, seed++);
    ASSERT_GT(wpe.nbytes(), limit);
    Tensor want = embedding(ids, wte, &wpe, c.pos);
    Tensor gwte = wte.to(gpu_device()), gwpe = wpe.to(gpu_device());
    EXPECT_TRUE(all_close(embedding(ids.to(gpu_device()), gwte, &gwpe, c.pos), want, 0, 0)) << shape_str(c.ids);
    std::vector<Tensor> chunks;
    for (const auto& h : split_rows_for_binding(wte, gpu_device())) chunks.push_back(h.to(gpu_device()));
    EXPECT_TRUE(all_close(embedding_chunked(ids, chunks, chunks[0].dim(0), &gwpe, c.pos), want, 0, 0))
        << shape_str(c.ids);
  }
}

// ---- LM head ------------------------------------------------------------------

std::vector<Tensor> random_chunks(const std::vector<int64_t>& rows, int64_t k, uint32_t seed) {
  std::vector<Tensor> out;
  for (int64_t r : rows) out.push_back(random_tensor({r, k}, seed++));
  return out;
}

Tensor concat_rows(const std::vector<Tensor>& chunks) {
  std::vector<float> all;
  int64_t rows = 0;
  for (const auto& c : chunks) {
    auto v = c.to_vector<float>();
    all.insert(all.end(), v.begin(), v.end());
    rows += c.dim(0);
  }
  return Tensor::from_vector(all, {rows, chunks[0].dim(1)});
}

TEST(Parity, GatherLmHead) {
  struct Case {
    Shape a;
    std::vector<int64_t> rows;
  };
  std::vector<Case> cases = {{{1, 1}, {1}},         {{3, 17}, {3, 3, 2}},   {{17, 33}, {17, 17, 5}},
                             {{129, 17}, {64, 65}}, {{2, 3, 17}, {1, 129}}, {{5, 1}, {3, 1}}};
  uint32_t seed = 1200;
  for (const auto& c : cases) {
    int64_t k = c.a.back();
    Tensor a = random_tensor(c.a, seed++);
    auto chunks = random_chunks(c.rows, k, seed += 10);
    std::vector<Tensor> in{a};
    in.insert(in.end(), chunks.begin(), chunks.end());
    auto op = [](auto& t) { return matmul_chunked_transb(t[0], std::vector<Tensor>(t.begin() + 1, t.end()), 0.5f); };
    // The tiled matmul's tolerance (see test_first_ops.cpp): f32 sums of k
    // products in different orders.
    double atol = 2e-6 * std::sqrt(double(k) + 1);
    EXPECT_TRUE(cpu_gpu_parity(in, op, atol, 1e-5)) << shape_str(c.a);
    // Against the unchunked matmul on the CPU.
    MatmulOptions o;
    o.transpose_b = true;
    o.alpha = 0.5f;
    Tensor a2 = a.reshape({a.numel() / k, k});
    Tensor want = matmul(a2, concat_rows(chunks), o);
    Tensor got = op(in);
    EXPECT_TRUE(all_close(got.reshape(want.shape()), want, atol, 1e-5)) << shape_str(c.a);
    Shape want_shape = c.a;
    want_shape.back() = want.dim(1);
    EXPECT_EQ(got.shape(), want_shape);
  }
}

// The backward of the chunked LM head on both backends, and against the
// unchunked formulas on the CPU: da = alpha dout @ W, dW_i = alpha dout_i^T @ a.
TEST(Parity, GatherLmHeadBackward) {
  struct Case {
    Shape a;
    std::vector<int64_t> rows;
  };
  // The last: a vocabulary of 133 (not a multiple of 4) over a hidden size of
  // 32 and 70 rows, so both gradients take the tiled vec4 kernel with A (the
  // logit gradient, row stride 133) read as scalars.
  std::vector<Case> cases = {{{1, 1}, {1}},          {{3, 17}, {3, 3, 2}},      {{17, 32}, {16, 16, 5}},
                             {{2, 65, 17}, {64, 65}}, {{70, 32}, {64, 7, 62}}};
  uint32_t seed = 1300;
  for (const auto& c : cases) {
    const int64_t k = c.a.back(), m = numel(c.a) / k;
    Tensor a = random_tensor(c.a, seed++);
    auto chunks = random_chunks(c.rows, k, seed += 10);
    int64_t n = 0;
    for (int64_t r : c.rows) n += r;
    Shape dshape = c.a;
    dshape.back() = n;
    Tensor dout = random_tensor(dshape, seed++);
    std::vector<Tensor> in{dout, a};
    in.insert(in.end(), chunks.begin(), chunks.end());
    // The tiled matmul's tolerance over the longer of the two sums (n or m terms).
    const double atol = 2e-6 * std::sqrt(double(std::max(n, m)) + 1);
    for (size_t out = 0; out <= chunks.size(); ++out) {
      auto op = [out](auto& t) {
        auto g = matmul_chunked_transb_backward(t[0], t[1], std::vector<Tensor>(t.begin() + 2, t.end()), 0.5f);
        return out == 0 ? g.da : g.dchunks[out - 1];
      };
      EXPECT_TRUE(cpu_gpu_parity(in, op, atol, 1e-5)) << shape_str(c.a) << " output " << out;
    }
    auto g = matmul_chunked_transb_backward(dout, a, chunks, 0.5f);
    MatmulOptions half;
    half.alpha = 0.5f;
    Tensor d2 = dout.reshape({m, n});
    EXPECT_EQ(g.da.shape(), a.shape());
    EXPECT_TRUE(all_close(g.da.reshape({m, k}), matmul(d2, concat_rows(chunks), half), atol, 1e-5));
    MatmulOptions ta = half;
    ta.transpose_a = true;
    Tensor dw = matmul(d2, a.reshape({m, k}), ta);  // [n, k]: every chunk's rows in order
    int64_t r0 = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      EXPECT_EQ(g.dchunks[i].shape(), chunks[i].shape());
      EXPECT_TRUE(all_close(g.dchunks[i], dw.slice_rows(r0, r0 + c.rows[i]), atol, 1e-5)) << "chunk " << i;
      r0 += c.rows[i];
    }
  }
  const std::string op = "matmul_chunked_transb_backward";
  Tensor a = Tensor::zeros({2, 3});
  EXPECT_TRUE(throws_named<ShapeError>([&] { matmul_chunked_transb_backward(Tensor::zeros({2, 5}), a, {Tensor::zeros({4, 3})}); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { matmul_chunked_transb_backward(Tensor::zeros({2, 4}), a, {}); }, op));
  EXPECT_TRUE(throws_named<DTypeError>([&] { matmul_chunked_transb_backward(Tensor::zeros({2, 4}, DType::U32), a, {Tensor::zeros({4, 3})}); }, op));
}

// Rows padded to whole vec4s (a training step's LM head, `pad_rows`): the
// forward writes zeros past the vocabulary, and the backward reads a padded
// gradient as the unpadded one, its padding ignored (NaN here, so that any
// read of it into a stored output shows). The chunks are placed so that the
// backward's products meet each way of reading A: the vec4 tiles over a
// whole vec4 dim, over a row's last part vec4 (A_TAIL: 7 rows at column 64,
// a single chunk of 133), and the scalar reads (a chunk at column 71).
TEST(Parity, GatherLmHeadPaddedRows) {
  struct Case {
    Shape a;
    std::vector<int64_t> rows;
  };
  const std::vector<Case> cases = {{{70, 32}, {64, 7, 62}}, {{70, 32}, {133}}, {{2, 9, 16}, {5, 6}}, {{3, 8}, {3}}};
  uint32_t seed = 1340;
  for (const auto& c : cases) {
    const int64_t k = c.a.back(), m = numel(c.a) / k;
    int64_t n = 0;
    for (int64_t r : c.rows) n += r;
    const int64_t pitch = (n + 3) / 4 * 4;
    Tensor a = random_tensor(c.a, seed++);
    auto chunks = random_chunks(c.rows, k, seed += 10);
    const double atol = 2e-6 * std::sqrt(double(std::max({n, m, k})) + 1);
    for (const Device& d : {Device::cpu(), gpu_device()}) {
      std::vector<Tensor> on_d;
      for (const Tensor& w : chunks) on_d.push_back(w.to(d));
      const Tensor want = matmul_chunked_transb(a, chunks, 0.5f).reshape({m, n});
      const Tensor got = matmul_chunked_transb(a.to(d), on_d, 0.5f, nullptr, true);
      Shape padded = c.a;
      padded.back() = pitch;
      ASSERT_EQ(got.shape(), padded) << d.name();
      const std::vector<float> g = got.to(Device::cpu()).to_vector<float>();
      const std::vector<float> w = want.to_vector<float>();
      std::vector<float> kept;
      for (int64_t r = 0; r < m; ++r) {
        kept.insert(kept.end(), g.begin() + r * pitch, g.begin() + r * pitch + n);
        for (int64_t j = n; j < pitch; ++j) EXPECT_EQ(g[size_t(r * pitch + j)], 0.0f) << d.name() << " row " << r;
      }
      EXPECT_TRUE(all_close(kept, w, atol, 1e-5)) << shape_str(c.a) << " " << d.name();

      // The backward: a padded dout against its first n columns.
      Tensor dout = random_tensor({m, n}, seed + 7);
      std::vector<float> dp(size_t(m * pitch), std::numeric_limits<float>::quiet_NaN());
      const std::vector<float> dv = dout.to_vector<float>();
      for (int64_t r = 0; r < m; ++r) std::copy_n(dv.begin() + r * n, n, dp.begin() + r * pitch);
      Shape dshape = c.a;
      dshape.back() = n;
      const Tensor dpad = Tensor::from_vector(dp, padded, d);
      const ChunkedTransbGrads ref = matmul_chunked_transb_backward(dout.reshape(dshape), a, chunks, 0.5f);
      const ChunkedTransbGrads gp = matmul_chunked_transb_backward(dpad, a.to(d), on_d, 0.5f);
      EXPECT_TRUE(all_close(gp.da.to(Device::cpu()), ref.da, atol, 1e-5)) << shape_str(c.a) << " " << d.name();
      for (size_t i = 0; i < chunks.size(); ++i)
        EXPECT_TRUE(all_close(gp.dchunks[i].to(Device::cpu()), ref.dchunks[i], atol, 1e-5))
            << shape_str(c.a) << " " << d.name() << " chunk " << i;
    }
  }
}

TEST(Validation, GatherLmHead) {
  const std::string op = "matmul_chunked_transb";
  Tensor a = Tensor::zeros({2, 3});
  EXPECT_TRUE(throws_named<ShapeError>([&] { matmul_chunked_transb(a, {}); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { matmul_chunked_transb(a, {Tensor::zeros({4, 3}), Tensor::zeros({4, 2})}); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { matmul_chunked_transb(a, {Tensor::zeros({12})}); }, op));
  EXPECT_TRUE(throws_named<DTypeError>([&] { matmul_chunked_transb(a, {Tensor::zeros({4, 3}, DType::U32)}); }, op));
  EXPECT_TRUE(throws_named<DeviceError>([&] { matmul_chunked_transb(a, {Tensor::zeros({4, 3}).to(gpu_device())}); }, op));
  // The backward's dout: padded wider than whole vec4s, or padded with its leading dims wrong.
  const std::string bop = "matmul_chunked_transb_backward";
  const std::vector<Tensor> five{Tensor::zeros({5, 3})};
  EXPECT_NO_THROW(matmul_chunked_transb_backward(Tensor::zeros({2, 8}), a, five));
  EXPECT_TRUE(throws_named<ShapeError>([&] { matmul_chunked_transb_backward(Tensor::zeros({2, 9}), a, five); }, bop));
  EXPECT_TRUE(throws_named<ShapeError>([&] { matmul_chunked_transb_backward(Tensor::zeros({3, 8}), a, five); }, bop));
}

TEST(Chunked, LmHeadUnderLoweredBindingLimit) {
  BindingLimit limit(64 * 1024);
  // wte [1000, 33] (132 KB) splits into aligned views; the logits [200, 1000]
  // (800 KB) are written in row blocks of 16.
  Tensor wte = random_tensor({1000, 33}, 1300), a = random_tensor({200, 33}, 1301);
  auto views = split_rows_for_binding(wte.to(gpu_device()), gpu_device());
  ASSERT_GT(views.size(), 1u);
  Tensor got = matmul_chunked_transb(a.to(gpu_device()), views, 0.25f);
  MatmulOptions o;
  o.transpose_b = true;
  o.alpha = 0.25f;
  EXPECT_TRUE(all_close(got, matmul(a, wte, o), 2e-6 * std::sqrt(34.0), 1e-5));
}

// ---- losses ---------------------------------------------------------------------

const std::vector<Shape> kLossShapes = {{1, 1}, {3, 17}, {17, 3}, {129, 129}, {17, 1}, {2, 3, 17}, {3, 1, 129}};

TEST(Parity, GatherNllAndCeBwd) {
  uint32_t seed = 1400;
  for (const Shape& s : kLossShapes) {
    Shape rows(s.begin(), s.end() - 1);
    Tensor probs = random_probs(s, seed++);
    Tensor ids = random_ids(rows, s.back(), seed++);
    // -log: the GPU's log is within a few ulps of libm's.
    EXPECT_TRUE(cpu_gpu_parity({probs, ids}, [](auto& in) { return gather_nll(in[0], in[1]); }, 1e-6, 2e-6))
        << shape_str(s);
    // One subtraction and one multiplication, each correctly rounded: exact.
    EXPECT_TRUE(cpu_gpu_parity({probs, ids}, [](auto& in) { return ce_bwd(in[0], in[1], 0.37f); }, 0, 0))
        << shape_str(s);
  }
}

TEST(Values, GatherNllAndCeBwdSmall) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor probs = Tensor::from_vector<float>({0.25f, 0.75f, 0.5f, 0.5f}, {2, 2}, d);
    Tensor ids = ids_tensor({1, 0}, {2}, d);
    EXPECT_TRUE(all_close(gather_nll(probs, ids).to_vector<float>(),
                          {float(-std::log(0.75)), float(-std::log(0.5))}, 1e-7, 1e-6))
        << d.name();
    EXPECT_EQ(ce_bwd(probs, ids, 0.5f).to_vector<float>(), (std::vector<float>{0.125f, -0.125f, -0.25f, 0.25f}))
        << d.name();
  }
}

TEST(Validation, GatherNllAndCeBwd) {
  Tensor probs = Tensor::zeros({3, 4});
  for (std::string op : {"gather_nll", "ce_bwd"}) {
    auto run = [&](const Tensor& p, const Tensor& i) {
      if (op == "gather_nll") gather_nll(p, i);
      else ce_bwd(p, i, 1.0f);
    };
    EXPECT_TRUE(throws_named<ShapeError>([&] { run(probs, ids_tensor({0, 1}, {2})); }, op));
    EXPECT_TRUE(throws_named<ShapeError>([&] { run(Tensor::zeros({4}), ids_tensor({0}, {1})); }, op));
    EXPECT_TRUE(throws_named<ValueError>([&] { run(probs, ids_tensor({0, 4, 1}, {3})); }, op));
    EXPECT_TRUE(throws_named<DTypeError>([&] { run(probs, Tensor::zeros({3})); }, op));
    EXPECT_TRUE(throws_named<DTypeError>([&] { run(Tensor::zeros({3, 4}, DType::I32), ids_tensor({0, 0, 0}, {3})); }, op));
    EXPECT_TRUE(throws_named<ValueError>([&] { run(probs.to(gpu_device()), ids_tensor({0, 4, 1}, {3})); }, op));
    EXPECT_TRUE(throws_named<DeviceError>([&] { run(probs, ids_tensor({0, 0, 0}, {3}, gpu_device())); }, op));
  }
  // Documented: an out-of-range id on the GPU gives NaN in its row only.
  Tensor p = random_probs({3, 4}, 3);
  Tensor bad = ids_tensor({0, 4, 1}, {3}, gpu_device());
  auto nll = gather_nll(p.to(gpu_device()), bad).to_vector<float>();
  EXPECT_FALSE(std::isnan(nll[0]));
  EXPECT_TRUE(std::isnan(nll[1]));
  EXPECT_FALSE(std::isnan(nll[2]));
  auto g = ce_bwd(p.to(gpu_device()), bad, 1.0f).to_vector<float>();
  for (int j = 0; j < 4; ++j) {
    EXPECT_FALSE(std::isnan(g[size_t(j)]));
    EXPECT_TRUE(std::isnan(g[size_t(4 + j)]));
  }
}

// cross_entropy_in_place: the loss and, in the logits, the gradient.
struct CeInPlace {
  std::vector<float> loss, grad;
};
CeInPlace ce_in_place(const Tensor& logits, const Tensor& ids, float scale, const Device& d) {
  Tensor x = logits.to(d).clone();
  Tensor loss = cross_entropy_in_place(x, ids, scale);
  return {loss.to_vector<float>(), x.to_vector<float>()};
}

// The reference in double: logsumexp - x[id], (softmax - onehot) * scale.
CeInPlace ce_reference(const Tensor& logits, const Tensor& ids, float scale) {
  const int64_t V = logits.dim(-1), R = logits.numel() / V;
  const std::vector<float> x = logits.to_vector<float>();
  const std::vector<uint32_t> id = ids.to_vector<uint32_t>();
  CeInPlace out{std::vector<float>(size_t(R)), std::vector<float>(x.size())};
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x.data() + r * V;
    double mx = xr[0], sum = 0;
    for (int64_t j = 0; j < V; ++j) mx = std::max(mx, double(xr[j]));
    for (int64_t j = 0; j < V; ++j) sum += std::exp(double(xr[j]) - mx);
    out.loss[size_t(r)] = float(mx + std::log(sum) - xr[id[size_t(r)]]);
    for (int64_t j = 0; j < V; ++j)
      out.grad[size_t(r * V + j)] =
          float((std::exp(double(xr[j]) - mx) / sum - (j == int64_t(id[size_t(r)]) ? 1.0 : 0.0)) * scale);
  }
  return out;
}

TEST(Parity, CrossEntropyInPlace) {
  uint32_t seed = 1450;
  // Past 4 x 256 columns the kernel's four-load loop runs; 1031 leaves a tail.
  std::vector<Shape> shapes = kLossShapes;
  shapes.push_back({5, 1031});
  shapes.push_back({2, 2, 4096});
  shapes.push_back({3, 16411});  // a vocabulary's width: the widest workgroup the device allows
  for (const Shape& s : shapes) {
    Shape rows(s.begin(), s.end() - 1);
    Tensor logits = random_tensor(s, seed++, -8.0f, 8.0f);
    Tensor ids = random_ids(rows, s.back(), seed++);
    const CeInPlace want = ce_reference(logits, ids, 0.37f);
    for (const Device& d : {Device::cpu(), gpu_device()}) {
      const CeInPlace got = ce_in_place(logits, ids, 0.37f, d);
      EXPECT_TRUE(all_close(got.loss, want.loss, 2e-6, 2e-6)) << shape_str(s) << " " << d.name();
      EXPECT_TRUE(all_close(got.grad, want.grad, 1e-7, 4e-6)) << shape_str(s) << " " << d.name();
    }
    // On the CPU the gradient is softmax then ce_bwd's, bit for bit.
    EXPECT_EQ(ce_in_place(logits, ids, 0.37f, Device::cpu()).grad,
              ce_bwd(softmax(logits), ids, 0.37f).to_vector<float>())
        << shape_str(s);
  }
}

// Padded rows (cols < the row width): each row's first cols entries are
// its logits, the loss and gradient those of the unpadded rows, and the
// padding is left as it was.
TEST(Parity, CrossEntropyInPlacePaddedRows) {
  uint32_t seed = 1470;
  for (const Shape& s : std::vector<Shape>{{3, 17}, {5, 1031}, {2, 2, 4093}}) {
    const int64_t V = s.back(), pitch = (V + 3) / 4 * 4 + 4, R = numel(s) / V;
    Shape rows(s.begin(), s.end() - 1);
    Tensor logits = random_tensor(s, seed++, -8.0f, 8.0f);
    Tensor ids = random_ids(rows, V, seed++);
    const std::vector<float> x = logits.to_vector<float>();
    std::vector<float> xp(size_t(R * pitch), 7.5f);
    for (int64_t r = 0; r < R; ++r) std::copy_n(x.begin() + r * V, V, xp.begin() + r * pitch);
    Shape padded = s;
    padded.back() = pitch;
    for (const Device& d : {Device::cpu(), gpu_device()}) {
      const CeInPlace want = ce_in_place(logits, ids, 0.37f, d);
      Tensor xpd = Tensor::from_vector(xp, padded, d);
      const std::vector<float> loss = cross_entropy_in_place(xpd, ids, 0.37f, V).to_vector<float>();
      const std::vector<float> g = xpd.to_vector<float>();
      EXPECT_EQ(loss, want.loss) << shape_str(s) << " " << d.name();
      std::vector<float> kept;
      for (int64_t r = 0; r < R; ++r) {
        kept.insert(kept.end(), g.begin() + r * pitch, g.begin() + r * pitch + V);
        for (int64_t j = V; j < pitch; ++j) EXPECT_EQ(g[size_t(r * pitch + j)], 7.5f) << d.name();
      }
      EXPECT_EQ(kept, want.grad) << shape_str(s) << " " << d.name();
    }
  }
}

TEST(Values, CrossEntropyInPlaceLargeMargin) {
  // The target's probability underflows f32 (a margin of 200): gather_nll
  // of the softmax gives +inf, the fused loss stays the margin.
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor logits = Tensor::from_vector<float>({0.0f, 200.0f, 1.0f, 1.0f}, {2, 2}, d);
    Tensor ids = ids_tensor({0, 1}, {2});
    Tensor loss = cross_entropy_in_place(logits, ids, 2.0f);
    EXPECT_TRUE(all_close(loss.to_vector<float>(), {200.0f, float(std::log(2.0))}, 1e-5, 1e-6)) << d.name();
    EXPECT_TRUE(all_close(logits.to_vector<float>(), {-2.0f, 2.0f, 1.0f, -1.0f}, 1e-6, 0)) << d.name();
  }
  // (The CPU's gather_nll: -log of a zero; a GPU's log(0) need not be -inf.)
  EXPECT_TRUE(std::isinf(
      gather_nll(softmax(Tensor::from_vector<float>({0.0f, 200.0f}, {1, 2})), ids_tensor({0}, {1})).to_vector<float>()[0]));
}

TEST(Validation, CrossEntropyInPlace) {
  const std::string op = "cross_entropy_in_place";
  auto run = [](Tensor x, const Tensor& i) { cross_entropy_in_place(x, i, 1.0f); };
  Tensor logits = Tensor::zeros({3, 4});
  EXPECT_TRUE(throws_named<ShapeError>([&] { run(logits, ids_tensor({0, 1}, {2})); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { run(Tensor::zeros({4}), ids_tensor({0}, {1})); }, op));
  EXPECT_TRUE(throws_named<ValueError>([&] { run(logits, ids_tensor({0, 4, 1}, {3})); }, op));
  EXPECT_TRUE(throws_named<DTypeError>([&] { run(logits, Tensor::zeros({3})); }, op));
  EXPECT_TRUE(throws_named<DTypeError>([&] { run(Tensor::zeros({3, 4}, DType::I32), ids_tensor({0, 0, 0}, {3})); }, op));
  EXPECT_TRUE(throws_named<ValueError>([&] { run(logits.to(gpu_device()), ids_tensor({0, 4, 1}, {3})); }, op));
  EXPECT_TRUE(throws_named<DeviceError>([&] { run(logits, ids_tensor({0, 0, 0}, {3}, gpu_device())); }, op));
  // cols past the row width or negative; an id past cols (within the row).
  auto run_cols = [](Tensor x, const Tensor& i, int64_t cols) { cross_entropy_in_place(x, i, 1.0f, cols); };
  EXPECT_TRUE(throws_named<ShapeError>([&] { run_cols(logits, ids_tensor({0, 0, 0}, {3}), 5); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { run_cols(logits, ids_tensor({0, 0, 0}, {3}), -1); }, op));
  EXPECT_TRUE(throws_named<ValueError>([&] { run_cols(logits, ids_tensor({0, 3, 0}, {3}), 3); }, op));
  // A rejected call leaves the logits as they were.
  Tensor kept = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4});
  EXPECT_THROW(cross_entropy_in_place(kept, ids_tensor({7}, {1}), 1.0f), ValueError);
  EXPECT_EQ(kept.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  // Documented: an out-of-range id on the GPU gives NaN in its row and loss only.
  Tensor x = random_tensor({3, 4}, 5).to(gpu_device());
  Tensor loss = cross_entropy_in_place(x, ids_tensor({0, 4, 1}, {3}, gpu_device()), 1.0f);
  const auto l = loss.to_vector<float>(), g = x.to_vector<float>();
  EXPECT_FALSE(std::isnan(l[0]));
  EXPECT_TRUE(std::isnan(l[1]));
  EXPECT_FALSE(std::isnan(l[2]));
  for (int j = 0; j < 4; ++j) {
    EXPECT_FALSE(std::isnan(g[size_t(j)]));
    EXPECT_TRUE(std::isnan(g[size_t(4 + j)]));
    EXPECT_FALSE(std::isnan(g[size_t(8 + j)]));
  }
}

TEST(Chunked, LossesUnderLoweredBindingLimit) {
  struct Case {
    uint64_t limit;
    Shape probs;
  };
  // 256-byte rows split in blocks of 16; 516-byte rows in aligned blocks of 64.
  std::vector<Case> cases = {{4096, {40, 64}}, {40000, {200, 129}}, {4096, {2, 20, 64}}};
  uint32_t seed = 1500;
  for (const auto& c : cases) {
    Tensor probs = random_probs(c.probs, seed++);
    Tensor ids = random_ids(Shape(c.probs.begin(), c.probs.end() - 1), c.probs.back(), seed++);
    BindingLimit limit(c.limit);
    EXPECT_TRUE(cpu_gpu_parity({probs, ids}, [](auto& in) { return gather_nll(in[0], in[1]); }, 1e-6, 2e-6));
    EXPECT_TRUE(cpu_gpu_parity({probs, ids}, [](auto& in) { return ce_bwd(in[0], in[1], -1.5f); }, 0, 0));
    // The logits in row blocks: each block's rows find their loss slots.
    Tensor logits = random_tensor(c.probs, seed++, -4.0f, 4.0f);
    const CeInPlace want = ce_reference(logits, ids, -1.5f);
    const CeInPlace got = ce_in_place(logits, ids, -1.5f, gpu_device());
    EXPECT_TRUE(all_close(got.loss, want.loss, 2e-6, 2e-6));
    EXPECT_TRUE(all_close(got.grad, want.grad, 1e-7, 4e-6));
  }
}

// ---- scatter_add_rows -------------------------------------------------------------

TEST(Values, ScatterAddRowsRepeatedIds) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor dst = Tensor::from_vector<float>({1, 1, 1, 1, 1, 1}, {3, 2}, d);
    Tensor src = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, d);
    scatter_add_rows(dst, ids_tensor({2, 0, 2, 2}, {4}, d), src);
    EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{4, 5, 1, 1, 14, 17})) << d.name();
  }
}

// Both backends add each dst element's contributions in row order: bitwise
// equal, with the ids on the GPU (scanned by every thread) and on the host
// (grouped by id there).
void check_scatter(const Tensor& dst0, const Tensor& ids, const Tensor& src) {
  Tensor want = dst0.clone();
  scatter_add_rows(want, ids, src);
  for (const Device& id_device : {gpu_device(), Device::cpu()}) {
    Tensor got = dst0.to(gpu_device());
    scatter_add_rows(got, ids.to(id_device), src.to(gpu_device()));
    EXPECT_TRUE(all_close(got, want, 0, 0))
        << "dst " << shape_str(dst0.shape()) << " ids " << shape_str(ids.shape()) << " on " << id_device.name();
  }
}

TEST(Parity, ScatterAddRows) {
  uint32_t seed = 1600;
  for (int64_t v : {1, 3, 17, 129})
    for (int64_t c : {1, 3, 17, 129})
      for (Shape rows : {Shape{1}, Shape{17}, Shape{129}, Shape{2, 17}}) {
        Shape src_shape = rows;
        src_shape.push_back(c);
        check_scatter(random_tensor({v, c}, seed++), random_ids(rows, v, seed++), random_tensor(src_shape, seed++));
      }
}

TEST(Validation, ScatterAddRows) {
  const std::string op = "scatter_add_rows";
  Tensor dst = Tensor::zeros({3, 2}), src = Tensor::zeros({2, 2});
  EXPECT_TRUE(throws_named<ValueError>([&] { scatter_add_rows(dst, ids_tensor({0, 3}, {2}), src); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { scatter_add_rows(dst, ids_tensor({0}, {1}), src); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { scatter_add_rows(dst, ids_tensor({0, 1}, {2}), Tensor::zeros({2, 3})); }, op));
  EXPECT_TRUE(throws_named<DTypeError>([&] { scatter_add_rows(dst, Tensor::zeros({2}), src); }, op));
  Tensor gdst = dst.to(gpu_device());
  EXPECT_TRUE(throws_named<DeviceError>([&] { scatter_add_rows(gdst, ids_tensor({0, 1}, {2}), src); }, op));
  EXPECT_TRUE(throws_named<ValueError>(
      [&] { scatter_add_rows(gdst, ids_tensor({0, 3}, {2}), src.to(gpu_device())); }, op));
  // dst and src views of one buffer cannot be bound together on WebGPU.
  Tensor both = Tensor::zeros({128, 2}).to(gpu_device());  // rows 64.. start at byte 512
  Tensor d1 = both.slice_rows(0, 3), s1 = both.slice_rows(64, 66);
  EXPECT_TRUE(throws_named<DeviceError>([&] { scatter_add_rows(d1, ids_tensor({0, 1}, {2}), s1); }, op));
  // Documented: an out-of-range id on the GPU is skipped.
  Tensor g = Tensor::zeros({3, 2}).to(gpu_device());
  scatter_add_rows(g, ids_tensor({1, 7}, {2}, gpu_device()), Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, gpu_device()));
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 0, 0}));
}

TEST(Chunked, ScatterAddRowsUnderLoweredBindingLimit) {
  {
    BindingLimit limit(8192);  // 68-byte rows: dst blocks of 64 rows
    check_scatter(random_tensor({300, 17}, 1700), random_ids({129}, 300, 1701), random_tensor({129, 17}, 1702));
    // src within one binding: host-grouped ids dispatched per dst block.
    check_scatter(random_tensor({300, 17}, 1706), random_ids({40}, 300, 1707), random_tensor({40, 17}, 1708));
  }
  {
    BindingLimit limit(4096);  // 256-byte rows: dst blocks of 16 rows, repeated ids
    Tensor ids = random_ids({2, 64}, 40, 1703);
    check_scatter(random_tensor({1000, 64}, 1704), ids, random_tensor({2, 64, 64}, 1705));
  }
}

// ---- head reshapes ------------------------------------------------------------------

struct HeadCase {
  Shape qkv;  // [T, 3C] or [B, T, 3C]
  int64_t h;
};
const std::vector<HeadCase> kHeadCases = {{{1, 3}, 1}, {{3, 18}, 2}, {{17, 36}, 3}, {{129, 24}, 4},
                                          {{2, 17, 36}, 3}, {{3, 1, 9}, 3}};

TEST(Parity, GatherHeads) {
  uint32_t seed = 1800;
  for (const auto& c : kHeadCases) {
    Tensor qkv = random_tensor(c.qkv, seed++);
    // Pure copies: exact.
    for (int w = 0; w < 3; ++w)
      EXPECT_TRUE(cpu_gpu_parity({qkv}, [&](auto& in) {
        QKV s = split_heads(in[0], c.h);
        return w == 0 ? s.q : w == 1 ? s.k : s.v;
      }, 0, 0)) << shape_str(c.qkv) << " part " << w;
    QKV s = split_heads(qkv, c.h);
    EXPECT_TRUE(cpu_gpu_parity({s.q}, [](auto& in) { return merge_heads(in[0]); }, 0, 0));
    Tensor merged = merge_heads(s.q);
    EXPECT_TRUE(cpu_gpu_parity({merged}, [&](auto& in) { return unmerge_heads(in[0], c.h); }, 0, 0));
    for (int w = 0; w < 3; ++w)
      EXPECT_TRUE(cpu_gpu_parity({s.k}, [&](auto& in) { return unsplit_head(in[0], w); }, 0, 0));
    EXPECT_TRUE(cpu_gpu_parity({s.q, s.k, s.v}, [](auto& in) { return unsplit_heads(in[0], in[1], in[2]); }, 0, 0));
    // Round trips on the GPU.
    Tensor g = qkv.to(gpu_device());
    QKV gs = split_heads(g, c.h);
    EXPECT_TRUE(all_close(unsplit_heads(gs.q, gs.k, gs.v), qkv, 0, 0));
    EXPECT_TRUE(all_close(unmerge_heads(merge_heads(gs.v), c.h), s.v, 0, 0));
  }
}

TEST(Values, GatherHeadsSmall) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    // T = 2, C = 2, h = 2, hd = 1: row t holds q0 q1 k0 k1 v0 v1.
    Tensor qkv = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 6}, d);
    QKV s = split_heads(qkv, 2);
    EXPECT_EQ(s.q.shape(), (Shape{2, 2, 1}));
    EXPECT_EQ(s.q.to_vector<float>(), (std::vector<float>{0, 6, 1, 7})) << d.name();
    EXPECT_EQ(s.k.to_vector<float>(), (std::vector<float>{2, 8, 3, 9})) << d.name();
    EXPECT_EQ(s.v.to_vector<float>(), (std::vector<float>{4, 10, 5, 11})) << d.name();
    Tensor m = merge_heads(s.v);
    EXPECT_EQ(m.shape(), (Shape{2, 2}));
    EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{4, 5, 10, 11})) << d.name();
    EXPECT_EQ(unsplit_head(s.k, 1).to_vector<float>(), (std::vector<float>{0, 0, 2, 3, 0, 0, 0, 0, 8, 9, 0, 0}))
        << d.name();
  }
}

TEST(Validation, GatherHeads) {
  EXPECT_TRUE(throws_named<ShapeError>([] { split_heads(Tensor::zeros({2, 7}), 1); }, "split_heads"));   // not 3C
  EXPECT_TRUE(throws_named<ShapeError>([] { split_heads(Tensor::zeros({2, 9}), 2); }, "split_heads"));   // C % h
  EXPECT_TRUE(throws_named<ValueError>([] { split_heads(Tensor::zeros({2, 9}), 0); }, "split_heads"));
  EXPECT_TRUE(throws_named<ShapeError>([] { split_heads(Tensor::zeros({9}), 1); }, "split_heads"));
  EXPECT_TRUE(throws_named<DTypeError>([] { split_heads(Tensor::zeros({2, 9}, DType::U32), 1); }, "split_heads"));
  EXPECT_TRUE(throws_named<ShapeError>([] { merge_heads(Tensor::zeros({2, 3})); }, "merge_heads"));
  EXPECT_TRUE(throws_named<ShapeError>([] { unmerge_heads(Tensor::zeros({2, 5}), 2); }, "unmerge_heads"));
  EXPECT_TRUE(throws_named<ShapeError>([] { unmerge_heads(Tensor::zeros({2, 2, 2, 2}), 2); }, "unmerge_heads"));
  EXPECT_TRUE(throws_named<ValueError>([] { unsplit_head(Tensor::zeros({2, 3, 4}), 3); }, "unsplit_head"));
  EXPECT_TRUE(throws_named<ShapeError>(
      [] { unsplit_heads(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 4, 4})); },
      "unsplit_heads"));
  EXPECT_TRUE(throws_named<DeviceError>(
      [] { unsplit_heads(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 3, 4}).to(gpu_device()), Tensor::zeros({2, 3, 4})); },
      "unsplit_heads"));
}

TEST(Chunked, HeadsUnderLoweredBindingLimit) {
  // 4 KiB bindings: every operand is several bindings, and odd widths make
  // runs start between aligned offsets. T = 37 with 3C = 45 splits inside a
  // batch row (a run over T); T = 5 fits whole batch rows (a run over B).
  const uint64_t limit = 4096;
  BindingLimit bound(limit);
  const std::vector<HeadCase> cases = {{{3, 37, 45}, 3}, {{67, 45}, 5}, {{13, 5, 129}, 43}, {{200, 9}, 1}};
  uint32_t seed = 1850;
  for (const auto& c : cases) {
    Tensor qkv = random_tensor(c.qkv, seed++);
    ASSERT_GT(qkv.nbytes(), limit);
    QKV want = split_heads(qkv, c.h);
    QKV got = split_heads(qkv.to(gpu_device()), c.h);
    EXPECT_TRUE(all_close(got.q, want.q, 0, 0)) << shape_str(c.qkv);
    EXPECT_TRUE(all_close(got.k, want.k, 0, 0)) << shape_str(c.qkv);
    EXPECT_TRUE(all_close(got.v, want.v, 0, 0)) << shape_str(c.qkv);
    EXPECT_TRUE(all_close(merge_heads(got.v), merge_heads(want.v), 0, 0)) << shape_str(c.qkv);
    Tensor merged = merge_heads(want.q);
    EXPECT_TRUE(all_close(unmerge_heads(merged.to(gpu_device()), c.h), unmerge_heads(merged, c.h), 0, 0));
    for (int w = 0; w < 3; ++w)
      EXPECT_TRUE(all_close(unsplit_head(got.k, w), unsplit_head(want.k, w), 0, 0)) << shape_str(c.qkv) << " " << w;
    EXPECT_TRUE(all_close(unsplit_heads(got.q, got.k, got.v), qkv, 0, 0)) << shape_str(c.qkv);
  }
  // One run of hd elements over the limit cannot be split.
  Tensor wide = Tensor::zeros({2, 1, 2048}).to(gpu_device());
  EXPECT_TRUE(throws_named<DeviceError>([&] { merge_heads(wide); }, "merge_heads"));
}

// ---- KV cache ---------------------------------------------------------------------------

TEST(Values, SplitAndConcatColumns) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    // Rows [0 1 2 | 3 4], [5 6 7 | 8 9]: widths 3 and 2.
    Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 5}, d);
    std::vector<Tensor> parts = split_columns(x, {3, 2});
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].shape(), (Shape{1, 2, 3}));
    EXPECT_EQ(parts[0].to_vector<float>(), (std::vector<float>{0, 1, 2, 5, 6, 7})) << d.name();
    EXPECT_EQ(parts[1].to_vector<float>(), (std::vector<float>{3, 4, 8, 9})) << d.name();
    Tensor back = concat_columns({parts[1], parts[0]});
    EXPECT_EQ(back.shape(), (Shape{1, 2, 5}));
    EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{3, 4, 0, 1, 2, 8, 9, 5, 6, 7})) << d.name();
  }
}

TEST(Parity, SplitAndConcatColumns) {
  Tensor x = random_tensor({37, 96}, 11);
  for (int part = 0; part < 3; ++part)
    EXPECT_TRUE(cpu_gpu_parity({x}, [&](auto& in) { return split_columns(in[0], {40, 8, 48})[size_t(part)]; }, 0, 0));
  const std::vector<Tensor> parts = split_columns(x, {40, 8, 48});
  EXPECT_TRUE(cpu_gpu_parity(parts, [](auto& in) { return concat_columns(in); }, 0, 0));
  EXPECT_TRUE(all_close(concat_columns(split_columns(x.to(gpu_device()), {40, 8, 48})), x, 0, 0));
}

TEST(Validation, SplitAndConcatColumns) {
  EXPECT_TRUE(throws_named<ShapeError>([] { split_columns(Tensor::zeros({2, 5}), {3, 3}); }, "split_columns"));
  EXPECT_TRUE(throws_named<ShapeError>([] { split_columns(Tensor::zeros({2, 5}), {}); }, "split_columns"));
  EXPECT_TRUE(throws_named<ValueError>([] { split_columns(Tensor::zeros({2, 5}), {6, -1}); }, "split_columns"));
  EXPECT_TRUE(throws_named<DTypeError>([] { split_columns(Tensor::zeros({2, 5}, DType::U32), {5}); }, "split_columns"));
  EXPECT_TRUE(throws_named<ValueError>([] { concat_columns({}); }, "concat_columns"));
  EXPECT_TRUE(throws_named<ShapeError>([] { concat_columns({Tensor::zeros({2, 5}), Tensor::zeros({3, 5})}); },
                                       "concat_columns"));
}

TEST(Parity, GatherKvAppend) {
  struct Case {
    Shape cache;
    int64_t t, len;
  };
  std::vector<Case> cases = {{{1, 1, 1}, 1, 0},  {{3, 17, 5}, 4, 13}, {{2, 129, 3}, 1, 128},
                             {{2, 3, 17, 5}, 17, 0}, {{1, 2, 9, 1}, 3, 2}};
  uint32_t seed = 1900;
  for (const auto& c : cases) {
    Shape src_shape = c.cache;
    src_shape[src_shape.size() - 2] = c.t;
    Tensor cache = random_tensor(c.cache, seed++), src = random_tensor(src_shape, seed++);
    // In place, a pure copy: exact, and rows outside [len, len + t) untouched.
    Tensor want = cache.clone(), got = cache.to(gpu_device());
    kv_append(want, src, c.len);
    kv_append(got, src.to(gpu_device()), c.len);
    EXPECT_TRUE(all_close(got, want, 0, 0)) << shape_str(c.cache);
    auto before = cache.to_vector<float>(), after = want.to_vector<float>(), s = src.to_vector<float>();
    int64_t hd = c.cache.back(), cap = c.cache[c.cache.size() - 2];
    int64_t heads = cache.numel() / (cap * hd);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < cap; ++r)
        for (int64_t j = 0; j < hd; ++j) {
          size_t at = size_t((h * cap + r) * hd + j);
          bool in = r >= c.len && r < c.len + c.t;
          EXPECT_EQ(after[at], in ? s[size_t((h * c.t + r - c.len) * hd + j)] : before[at]);
        }
  }
}

TEST(Validation, GatherKvAppend) {
  const std::string op = "kv_append";
  Tensor cache = Tensor::zeros({2, 8, 4});
  EXPECT_TRUE(throws_named<ValueError>([&] { kv_append(cache, Tensor::zeros({2, 3, 4}), 6); }, op));  // 6 + 3 > 8
  EXPECT_TRUE(throws_named<ValueError>([&] { kv_append(cache, Tensor::zeros({2, 1, 4}), -1); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { kv_append(cache, Tensor::zeros({3, 1, 4}), 0); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { kv_append(cache, Tensor::zeros({2, 1, 5}), 0); }, op));
  EXPECT_TRUE(throws_named<ShapeError>([&] { kv_append(cache, Tensor::zeros({1, 2, 1, 4}), 0); }, op));
  EXPECT_TRUE(throws_named<DeviceError>([&] { kv_append(cache, Tensor::zeros({2, 1, 4}).to(gpu_device()), 0); }, op));
  Tensor one = Tensor::zeros({1, 128, 4}).to(gpu_device());
  Tensor src = one.reshape({128, 1, 4}).slice_rows(64, 66).reshape({1, 2, 4});  // a view into the cache
  EXPECT_TRUE(throws_named<DeviceError>([&] { kv_append(one, src, 0); }, op));
}

TEST(Chunked, KvAppendUnderLoweredBindingLimit) {
  struct Case {
    Shape cache;
    int64_t t, len;
  };
  // A cache over the limit: runs over heads ([2, 3, 100, 7]: 2800 bytes a
  // head), over rows within one head ([1, 2, 300, 5]), and over batches.
  const uint64_t limit = 4096;
  BindingLimit bound(limit);
  std::vector<Case> cases = {{{2, 3, 100, 7}, 20, 50}, {{1, 2, 300, 5}, 250, 30}, {{5, 1, 40, 9}, 3, 37},
                             {{3, 129, 3}, 129, 0}};
  uint32_t seed = 1950;
  for (const auto& c : cases) {
    Shape src_shape = c.cache;
    src_shape[src_shape.size() - 2] = c.t;
    Tensor cache = random_tensor(c.cache, seed++), src = random_tensor(src_shape, seed++);
    ASSERT_GT(cache.nbytes(), limit);
    Tensor want = cache.clone(), got = cache.to(gpu_device());
    kv_append(want, src, c.len);
    kv_append(got, src.to(gpu_device()), c.len);
    EXPECT_TRUE(all_close(got, want, 0, 0)) << shape_str(c.cache);
  }
}

}  // namespace
