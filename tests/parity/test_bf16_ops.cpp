// Dense weights kept in bf16 (forge/ops/core.h): matmul with a bf16 B, the
// fused decode products (matmul_transb_many, silu_gate_matmul) with bf16
// weights, and bf16_to_f32, on every device against the f32 ops on the
// bf16-rounded values. Widening a bf16 is exact, so only the order of the
// f32 sums differs: tolerances are f32's (atol 2e-5, rtol 1e-5 for sums of
// up to ~500 products of values in [-1, 1)). Shapes cover the kernels each
// backend picks: one row and a few (the matrix-vector kernels, the serial
// one for k <= 256 and the 32-lane one above), 5..16 rows (8 rows a
// workgroup), more rows and a vocabulary-wide B (the vec4 tiles, reading
// bf16 as they fetch it, also in k-slices) and shapes the vec4 kernels do
// not take (k not a multiple of 4, n not one for B [k, n]: a widened copy).
#include "parity/parity.h"
#include "unit/scoped_env.h"
#include "webgpu/kernels.h"

using namespace forge;
using namespace forge::testing;

namespace {

constexpr double kAtol = 2e-5, kRtol = 1e-5;

// A bf16 matrix of random values, and the same values as f32.
struct Bf16Weight {
  Tensor w;        // bf16 [rows, cols] on the CPU
  Tensor rounded;  // f32 [rows, cols]: exactly the bf16 values
};

Bf16Weight make_weight(int64_t rows, int64_t cols, uint32_t seed) {
  std::vector<float> v = random_values(rows * cols, seed);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    h[i] = f32_to_bf16(v[i]);
    v[i] = bf16_to_f32(h[i]);
  }
  return {Tensor::from_data(h.data(), {rows, cols}, DType::BF16), Tensor::from_vector(v, {rows, cols})};
}

// From the host bytes: an odd count of 16-bit values is padded to whole words.
Tensor on(const Tensor& t, const Device& dev) { return Tensor::from_data(t.raw_data(), t.shape(), t.dtype(), dev); }

}  // namespace

TEST(Bf16Ops, WidenIsExact) {
  for (int64_t n : {1, 7, 1001}) {
    Bf16Weight w = make_weight(1, n, uint32_t(n));
    for (const Device& dev : test_devices()) {
      Tensor got = bf16_to_f32(on(w.w, dev));
      EXPECT_EQ(got.dtype(), DType::F32);
      EXPECT_TRUE(all_close(got, w.rounded, 0, 0)) << n << " values on " << dev.name();
    }
  }
}

#ifdef FORGE_HAVE_WEBGPU
// Runs of values under a lowered binding limit: several dispatches, each
// starting at an aligned value.
TEST(Bf16Ops, WidenInRuns) {
  Bf16Weight w = make_weight(3, 700, 5);
  LoweredBindingLimit limit(1024);
  Tensor got = bf16_to_f32(on(w.w, gpu_device()));
  EXPECT_TRUE(all_close(got, w.rounded, 0, 0));
}
#endif

TEST(Bf16Ops, MatmulTransposedB) {
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{1, 1, 4},   {1, 17, 12},  {3, 33, 8},  {1, 9, 260}, {4, 7, 516},
                        {5, 13, 12}, {17, 3, 260}, {32, 5, 8},  {40, 9, 36}, {3, 5, 33},
                        {1, 7, 3},   {129, 3, 4}};
  uint32_t seed = 10;
  for (const Case& c : cases) {
    for (bool with_bias : {false, true}) {
      Tensor x = random_tensor({c.m, c.k}, ++seed);
      Bf16Weight w = make_weight(c.n, c.k, ++seed);
      Tensor bias = random_tensor({c.n}, ++seed);
      MatmulOptions o;
      o.transpose_b = true;
      o.alpha = 0.5f;
      if (with_bias) o.bias = &bias;
      Tensor want = matmul(x, w.rounded, o);
      for (const Device& dev : test_devices()) {
        Tensor bd = bias.to(dev);
        MatmulOptions od = o;
        if (with_bias) od.bias = &bd;
        Tensor got = matmul(x.to(dev), on(w.w, dev), od);
        EXPECT_TRUE(all_close(got, want, kAtol, kRtol))
            << "m " << c.m << " n " << c.n << " k " << c.k << (with_bias ? " with bias" : "") << " on " << dev.name();
      }
    }
  }
}

// A bf16 B [k, n] (not transposed) and a batch broadcast: n = 5 takes the
// widened path, n = 8 and 20 over more than 64 rows or k > 256 (past the
// serial kernel) the tiles reading bf16.
TEST(Bf16Ops, MatmulOtherLayouts) {
  struct Case {
    Shape x;
    int64_t n;
  };
  for (const Case& c : {Case{{2, 3, 12}, 5}, Case{{2, 40, 260}, 8}, Case{{70, 36}, 20}}) {
    Tensor x = random_tensor(c.x, uint32_t(c.n));
    Bf16Weight w = make_weight(c.x.back(), c.n, 2);
    Tensor want = matmul(x, w.rounded);
    for (const Device& dev : test_devices())
      EXPECT_TRUE(all_close(matmul(x.to(dev), on(w.w, dev)), want, kAtol, kRtol))
          << shape_str(c.x) << " n " << c.n << " on " << dev.name();
  }
}

#ifdef FORGE_HAVE_WEBGPU
// k in 4 slices (a GPU of one core; 64x64 tiles): 3 of 320 and a last of
// 244, bound from B's 960th row along k. Against B [k, n] that offset is
// 46,080 bytes of bf16 and the tiles read it; against B [n, k] it is 1,920,
// not an allowed binding offset, and a widened copy takes the product.
TEST(Bf16Ops, MatmulInKSlices) {
  ScopedEnv cores("FORGE_MATMUL_CORES", "1");
  const int64_t m = 20, k = 1204, n = 24;
  Tensor x = random_tensor({m, k}, 7);
  for (bool trans_b : {false, true}) {
    MatmulPlan plan;
    plan.m = m, plan.k = k, plan.n = n, plan.trans_b = trans_b, plan.lda = k, plan.ldb = trans_b ? k : n;
    ASSERT_EQ(webgpu::matmul_tiling(plan, gpu_device()), "64x64 in 4 slices");
    Bf16Weight w = trans_b ? make_weight(n, k, 8) : make_weight(k, n, 9);
    MatmulOptions o;
    o.transpose_b = trans_b;
    Tensor want = matmul(x, w.rounded, o);
    Tensor got = matmul(x.to(gpu_device()), on(w.w, gpu_device()), o);
    EXPECT_TRUE(all_close(got, want, kAtol, 1e-5)) << (trans_b ? "B [n, k]" : "B [k, n]");
  }
}
#endif

TEST(Bf16Ops, FusedDecodeProducts) {
  for (int64_t k : {8, 260}) {
    for (int64_t m : {1, 3}) {
      Tensor x = random_tensor({m, k}, uint32_t(k + m));
      Bf16Weight q = make_weight(12, k, 1), kw = make_weight(5, k, 2), v = make_weight(5, k, 3);
      Bf16Weight gate = make_weight(9, k, 4), up = make_weight(9, k, 5);
      std::vector<Tensor> want = matmul_transb_many(x, {q.rounded, kw.rounded, v.rounded});
      Tensor want_sg = silu_gate_matmul(x, gate.rounded, up.rounded);
      for (const Device& dev : test_devices()) {
        std::vector<Tensor> got = matmul_transb_many(x.to(dev), {on(q.w, dev), on(kw.w, dev), on(v.w, dev)});
        ASSERT_EQ(got.size(), 3u);
        for (size_t i = 0; i < 3; ++i)
          EXPECT_TRUE(all_close(got[i], want[i], kAtol, kRtol)) << "weight " << i << " k " << k << " m " << m
                                                                << " on " << dev.name();
        EXPECT_TRUE(all_close(silu_gate_matmul(x.to(dev), on(gate.w, dev), on(up.w, dev)), want_sg, kAtol, kRtol))
            << "k " << k << " m " << m << " on " << dev.name();
      }
    }
  }
}

TEST(Bf16Ops, Validation) {
  Bf16Weight w = make_weight(4, 8, 1);
  Tensor x = random_tensor({2, 8}, 2);
  MatmulOptions o;
  o.transpose_b = true;
  expect_error<DTypeError>("matmul", [&] { matmul(w.w, w.rounded, o); }, "a must be f32");
  expect_error<DTypeError>("matmul", [&] { matmul(x, Tensor::zeros({4, 8}, DType::I32), o); }, "f32 or bf16");
  expect_error<DTypeError>("bf16_to_f32", [&] { bf16_to_f32(x); }, "bf16");
  // One dtype for every weight of a fused product.
  expect_error<DTypeError>("matmul_transb_many", [&] { matmul_transb_many(x, {w.w, w.rounded}); });
  expect_error<DTypeError>("silu_gate_matmul", [&] { silu_gate_matmul(x, w.rounded, w.w); });
}
