// The tiled kernel's epilogues (MatmulOptions::gelu and ::residual for many
// rows: GPT-2's prefill MLP input and the products that feed its residual
// stream): in the tiles' store and, split over k, in the reduction's. On
// every device they equal the plain ops on the CPU (the product with its
// bias, then gelu, then the residual added), for B stored [k, n] and [n, k]
// (f32, and bf16 widened for the tiles), and the tiling each case is meant
// to reach is checked first.
#include <optional>

#include "parity/decode_fusion_cases.h"
#include "unit/scoped_env.h"
#include "webgpu/kernels.h"

namespace forge::testing {
namespace {

struct EpilogueCase {
  int64_t m, k, n;
  const char* tiling;  // matmul_tiling's answer on a GPU of 2 cores (FORGE_MATMUL_CORES)
};
// 2 cores: 40 x 132 x 36 in one 64 x 64 tile, k too shallow to split; 70 x
// 1024 x 20, one 128 x 128 tile over 2 k-slices (half a wave, split: the
// reduction's epilogues); 300 x 64 x 260 in 128 x 128 tiles that fill their
// waves.
const std::vector<EpilogueCase> kCases = {
    {40, 132, 36, "64x64"}, {70, 1024, 20, "128x128 in 2 slices"}, {300, 64, 260, "128x128"}};

MatmulPlan plan_of(const EpilogueCase& c, bool transpose_b) {
  MatmulPlan p;
  p.m = c.m, p.k = c.k, p.n = c.n, p.trans_b = transpose_b;
  p.lda = c.k, p.ldb = transpose_b ? c.k : c.n;
  return p;
}

void check_epilogues(const std::vector<EpilogueCase>& cases, uint32_t seed) {
  for (const EpilogueCase& c : cases) {
    for (bool transpose_b : {false, true}) {
      for (DType dt : {DType::F32, DType::BF16}) {
        if (dt == DType::BF16 && !transpose_b) continue;  // bf16 weights are [n, k] rows
        SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) +
                     (transpose_b ? " [n, k] " : " [k, n] ") + dtype_name(dt));
        const Tensor x = random_tensor({c.m, c.k}, seed++, -1.0f, 1.0f);
        const Tensor wnk = weight_as(random_tensor({c.n, c.k}, seed++), dt);  // [n, k]
        const Tensor wd = dt == DType::BF16 ? bf16_to_f32(wnk) : wnk;
        const Tensor bias = random_tensor({c.n}, seed++), r = random_tensor({c.m, c.n}, seed++);
        MatmulOptions plain;
        plain.transpose_b = true;
        plain.bias = &bias;
        const Tensor y = matmul(x, wd, plain);
        const Tensor want_gelu = gelu(y), want_res = add(r, y), want_both = add(r, gelu(y));
        // B as the case stores it: [n, k], or the Conv1D layout [k, n].
        const Tensor w = transpose_b ? wnk : transposed(wd);
        for (const Device& dev : test_devices()) {
          SCOPED_TRACE(dev.name());
          if (dev.is_webgpu()) EXPECT_EQ(webgpu::matmul_tiling(plan_of(c, transpose_b), dev), c.tiling);
          const Tensor X = x.to(dev), W = w.to(dev), BIAS = bias.to(dev), R = r.to(dev);
          const double atol = decode_fusion_tolerance(c.k);
          MatmulOptions o;
          o.transpose_b = transpose_b;
          o.bias = &BIAS;
          o.gelu = true;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_gelu, atol, 1e-5)) << "gelu";
          o.residual = &R;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_both, atol, 1e-5)) << "gelu, residual";
          o.gelu = false;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_res, atol, 1e-5)) << "residual";
        }
      }
    }
  }
}

TEST(TileEpilogueParity, GeluAndResidualEqualThePlainOps) {
  ScopedEnv cores("FORGE_MATMUL_CORES", "2");
  check_epilogues(kCases, 1700);
}

// The last wave in pieces, forced (2 cores: 4 tiles a wave): the
// epilogues in the store of the whole tiles and in the fixup of the split
// ones.
TEST(TileEpilogueParity, PiecesEpiloguesEqualThePlainOps) {
  ScopedEnv cores("FORGE_MATMUL_CORES", "2");
  ScopedEnv pieces("FORGE_MATMUL_PIECES", "3");
  check_epilogues({{300, 200, 260, "128x128, 1 tiles in 3 pieces"}, {70, 1024, 20, "128x128, 1 tiles in 3 pieces"}},
                  1750);
}

// MatmulOptions::accumulate: out += the product, in the tiles' store, the
// split-K reduction's, the pieces' fixup, and through a temporary and
// gradient_accumulate where the kernels do not take it (few rows, the CPU):
// on every device out + the plain product, as gradient_accumulate rounds it.
TEST(TileEpilogueParity, AccumulateAddsIntoOut) {
  ScopedEnv cores("FORGE_MATMUL_CORES", "2");
  struct Case {
    int64_t m, k, n;
    bool transpose_a;
    const char* pieces;  // FORGE_MATMUL_PIECES, or none
  };
  // One 64 x 64 tile; 2 k-slices (the reduction); whole 128 x 128 tiles; a
  // weight gradient's layout (A read transposed); the last wave in pieces;
  // 3 rows (the matrix-vector kernels: a temporary).
  const std::vector<Case> cases = {{40, 132, 36, false, nullptr}, {70, 1024, 20, false, nullptr},
                                   {300, 64, 260, false, nullptr}, {200, 96, 136, true, nullptr},
                                   {300, 200, 260, false, "3"},    {3, 64, 40, false, nullptr}};
  uint32_t seed = 1800;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) +
                 (c.transpose_a ? " A^T" : "") + (c.pieces ? " in pieces" : ""));
    std::optional<ScopedEnv> pieces;
    if (c.pieces) pieces.emplace("FORGE_MATMUL_PIECES", c.pieces);
    const Tensor a = random_tensor(c.transpose_a ? Shape{c.k, c.m} : Shape{c.m, c.k}, seed++);
    const Tensor b = random_tensor({c.k, c.n}, seed++), c0 = random_tensor({c.m, c.n}, seed++);
    MatmulOptions plain;
    plain.transpose_a = c.transpose_a;
    for (const Device& dev : test_devices()) {
      SCOPED_TRACE(dev.name());
      const Tensor A = a.to(dev), B = b.to(dev);
      Tensor want = c0.to(dev);
      gradient_accumulate(want, matmul(A, B, plain));
      Tensor out = c0.to(dev);
      MatmulOptions o = plain;
      o.out = &out;
      o.accumulate = true;
      const Tensor got = matmul(A, B, o);
      EXPECT_EQ(got.storage_id(), out.storage_id());
      EXPECT_TRUE(all_close(out.to(Device::cpu()), want.to(Device::cpu()), 1e-6, 1e-6));
    }
  }
}

TEST(TileEpilogueValidation, AccumulateNeedsOut) {
  for (const Device& dev : test_devices()) {
    const Tensor a = random_tensor({130, 64}, 1890).to(dev), b = random_tensor({64, 36}, 1891).to(dev);
    MatmulOptions o;
    o.accumulate = true;
    EXPECT_THROW(matmul(a, b, o), ValueError) << dev.name();
  }
}

}  // namespace
}  // namespace forge::testing
