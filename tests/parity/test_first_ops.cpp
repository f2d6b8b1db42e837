// Parity and validation for the first ops: add, scale, matmul, softmax.
#include "parity/parity.h"
#include "webgpu/kernels.h"

using namespace forge;
using namespace forge::testing;

namespace {

const std::vector<Shape> kElementwiseShapes = {{1}, {3}, {17}, {129}, {3, 17}, {2, 3, 129}, {1000, 3}};

TEST(Parity, Add) {
  uint32_t seed = 1;
  for (const Shape& s : kElementwiseShapes) {
    EXPECT_TRUE(cpu_gpu_parity({random_tensor(s, seed++), random_tensor(s, seed++)},
                               [](auto& in) { return add(in[0], in[1]); }, 0, 0))
        << shape_str(s);  // one correctly rounded f32 addition: exact
  }
}

TEST(Parity, Scale) {
  uint32_t seed = 10;
  for (const Shape& s : kElementwiseShapes) {
    EXPECT_TRUE(cpu_gpu_parity({random_tensor(s, seed++)}, [](auto& in) { return scale(in[0], -0.37f); }, 0, 0))
        << shape_str(s);  // one correctly rounded multiplication: exact
  }
}

TEST(Values, AddAndScaleExact) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3}, d);
    Tensor b = Tensor::from_vector<float>({10, 20, 30}, {3}, d);
    EXPECT_EQ(add(a, b).to_vector<float>(), (std::vector<float>{11, 22, 33})) << d.name();
    EXPECT_EQ(scale(a, 0.5f).to_vector<float>(), (std::vector<float>{0.5f, 1, 1.5f})) << d.name();
  }
}

struct MatmulCase {
  Shape a, b;
  bool ta, tb;
  bool bias;
  int64_t b_rows;
};

// Tolerance: both sides accumulate k products in f32 in different orders;
// 1e-5 relative plus 2e-6 * sqrt(k) absolute covers k up to a few thousand.
void check_matmul(const MatmulCase& c, uint32_t seed) {
  Tensor a = random_tensor(c.a, seed);
  Tensor b = random_tensor(c.b, seed + 1);
  int64_t n = c.tb ? (c.b_rows >= 0 ? c.b_rows : c.b[c.b.size() - 2]) : c.b.back();
  Tensor bias = random_tensor({n}, seed + 2);
  std::vector<Tensor> in{a, b, bias};
  int64_t k = c.ta ? c.a[c.a.size() - 2] : c.a.back();
  double atol = 2e-6 * std::sqrt(double(k) + 1);
  EXPECT_TRUE(cpu_gpu_parity(in,
                             [&](auto& t) {
                               MatmulOptions o;
                               o.transpose_a = c.ta;
                               o.transpose_b = c.tb;
                               o.alpha = 0.75f;
                               o.b_rows = c.b_rows;
                               if (c.bias) o.bias = &t[2];
                               return matmul(t[0], t[1], o);
                             },
                             atol, 1e-5))
      << "a " << shape_str(c.a) << " b " << shape_str(c.b) << " ta " << c.ta << " tb " << c.tb;
}

TEST(Parity, Matmul) {
  std::vector<MatmulCase> cases = {
      {{1, 1}, {1, 1}, false, false, false, -1},
      {{3, 17}, {17, 5}, false, false, true, -1},
      {{17, 3}, {17, 129}, true, false, false, -1},
      {{129, 17}, {65, 17}, false, true, true, -1},
      {{17, 129}, {3, 17}, true, true, false, -1},
      {{64, 64}, {64, 64}, false, false, false, -1},
      {{100, 200}, {200, 70}, false, false, true, -1},
      {{3, 7, 9}, {3, 9, 11}, false, false, false, -1},   // batched
      {{3, 7, 9}, {9, 11}, false, false, true, -1},       // B broadcast
      {{7, 9}, {3, 9, 11}, false, false, false, -1},      // A broadcast
      {{2, 5, 16}, {2, 40, 16}, false, true, false, 13},  // q @ K^T over a cache of 40 rows, 13 used
      {{2, 5, 13}, {2, 40, 16}, false, false, false, 13}, // P @ V over the same cache
      // Few rows take the matrix-vector kernel: one invocation a column up
      // to k = 256 (these first rows), 32 lanes a column beyond.
      {{4, 129}, {129, 200}, false, false, true, -1},
      {{3, 1, 16}, {3, 40, 16}, false, true, false, 17},  // one query over a cache
      {{3, 1, 17}, {3, 40, 16}, false, false, false, 17},
      {{2, 70}, {300, 70}, false, true, true, -1},        // LM-head shape
      {{3, 300}, {300, 50}, false, false, true, -1},
      {{2, 301}, {41, 301}, false, true, false, -1},
      // ... and up to 64 rows in blocks of 4 (a tiny model's training batch),
      // one block per workgroup row.
      {{11, 33}, {33, 70}, false, false, true, -1},
      {{2, 32, 17}, {2, 17, 9}, false, false, false, -1},
      {{19, 70}, {45, 70}, false, true, false, 40},
      {{64, 40}, {130, 40}, false, true, true, -1},       // vec4 B [n, k]
      {{65, 16}, {16, 9}, false, false, false, -1},       // one row too many: tiles
      // Past k = 256, a batch of sequences' decode step: against B [n, k]
      // 8 rows a workgroup, two row groups (k odd: the scalar kernel);
      // against B [k, n] the tiles.
      {{11, 301}, {70, 301}, false, true, true, -1},
      {{11, 300}, {300, 70}, false, false, true, -1},
      {{2, 17, 257}, {2, 257, 9}, false, false, false, -1},
      // ... over vec4s of B [n, k] when k and the strides are multiples of 4:
      // the four-loads-in-flight steps, their tail, and k below one step.
      {{4, 264}, {203, 264}, false, true, true, -1},
      {{1, 1024}, {37, 1024}, false, true, false, -1},
      {{2, 8}, {5, 8}, false, true, true, -1},
      {{2, 3, 40}, {2, 9, 40}, false, true, false, -1},   // batched
      // ... eight rows a workgroup for a batch of sequences' decode step
      // (one partial group, two); a B over 17..32 rows, or over 9..32
      // rows as wide as a vocabulary (an LM head), in tiles.
      {{5, 264}, {33, 264}, false, true, true, -1},
      {{13, 520}, {41, 520}, false, true, true, -1},
      {{2, 32, 260}, {2, 19, 260}, false, true, false, -1},
      {{9, 260}, {16385, 260}, false, true, true, -1},
      // Enough 128x128 tiles to fill two waves of a large GPU select the
      // large-tile kernel.
      {{256, 17, 3}, {3, 17}, false, false, true, -1},
      {{256, 17, 5}, {17, 5}, false, true, false, -1},
      // Contiguous dims, strides and offsets that are multiples of 4 take the
      // vec4 kernel, in both tile sizes and every layout.
      {{100, 200}, {200, 72}, false, false, true, -1},
      {{36, 20}, {36, 132}, true, false, false, -1},
      {{132, 20}, {68, 20}, false, true, true, -1},
      {{20, 132}, {8, 20}, true, true, false, -1},
      {{3, 7, 12}, {3, 12, 16}, false, false, false, -1},
      {{2, 5, 16}, {2, 40, 16}, false, true, false, 12},
      {{256, 20, 8}, {8, 20}, false, false, true, -1},
      {{256, 21, 8}, {20, 8}, false, true, false, -1},
      {{256, 8, 20}, {256, 8, 12}, true, false, false, -1},
      {{256, 20, 8}, {256, 12, 8}, false, true, true, -1},
      // B aligned but A not (its contiguous dim odd): the vec4 tiles with A
      // read as scalars, in each layout that allows it (nt has A and B
      // contiguous along the same k).
      {{70, 37}, {37, 24}, false, false, true, -1},
      {{37, 70}, {37, 24}, true, false, false, -1},
      {{36, 70}, {24, 36}, true, true, true, -1},
      {{3, 9, 21}, {3, 21, 12}, false, false, false, -1},
  };
  uint32_t seed = 100;
  for (const auto& c : cases) check_matmul(c, seed += 3);
}

// The plan of A [m, k] @ B [k, n] with A or B stored transposed, dense.
MatmulPlan plan(int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  MatmulPlan p;
  p.m = m, p.k = k, p.n = n, p.trans_a = ta, p.trans_b = tb;
  p.lda = ta ? m : k, p.ldb = tb ? k : n;
  return p;
}

// Split-K: a small output over a deep k is computed as slices of k whose
// partial products one pass sums (in order, deterministic), in every layout,
// with A aligned and not, and with the bias added once. A k that the slices
// (multiples of 64 deep) do not divide ends in a shorter slice, a second
// dispatch. A batch, or a k no slicing leaves 128 deep, keeps a single
// pass, and a binding limit too low for the partial products fewer slices;
// each must agree as well.
TEST(Parity, MatmulSplitK) {
  std::vector<MatmulCase> cases = {
      {{72, 1024}, {1024, 20}, false, false, true, -1},
      {{1024, 40}, {1024, 24}, true, false, false, -1},
      {{68, 768}, {36, 768}, false, true, true, -1},
      {{1024, 40}, {24, 1024}, true, true, false, -1},
      {{1024, 70}, {1024, 24}, true, false, true, -1},   // A [k, 70]: scalar A
      {{1030, 40}, {1030, 24}, true, false, false, -1},  // 8 x 128 and 6
      {{68, 1000}, {36, 1000}, false, true, true, -1},   // 3 x 256 and 232, B [n, k]
      {{70, 1027}, {1027, 24}, false, false, true, -1},  // odd k: scalar A, 8 x 128 and 3
      {{2, 72, 512}, {2, 512, 20}, false, false, false, -1},
      {{72, 200}, {200, 20}, false, false, true, -1},  // k / 2 < 128: one pass
      // 64 tiles of 128x128 (half a wave of a large GPU) in two slices.
      {{1024, 512}, {512, 1024}, false, false, true, -1},
  };
  uint32_t seed = 900;
  for (const auto& c : cases) check_matmul(c, seed += 3);
  // 9 tiles over k = 512 take 4 slices; a binding limit of A's size (every
  // binding must fit) leaves room for the partial products of 2 [2, 192,
  // 192] but not of 4.
  const MatmulCase square{{192, 512}, {512, 192}, false, false, true, -1};
  check_matmul(square, seed += 3);
  {
    // Four k-slices of 128x128 tiles over a deep k, as a GPU of 2 cores
    // takes them (2 tiles: from 3/4 of a wave to two).
    ScopedEnv cores("FORGE_MATMUL_CORES", "2");
    check_matmul({{128, 4096}, {4096, 256}, false, false, true, -1}, seed += 3);
  }
  {
    // A vocabulary-deep k (the LM head's input gradient, A's row stride
    // odd) on one 128x128 tile: 4 slices fill a wave of two a core on a GPU
    // of 2, in 4 x 4096 and a last slice of 3.
    ScopedEnv cores("FORGE_MATMUL_CORES", "2");
    check_matmul({{70, 16387}, {16387, 24}, false, false, true, -1}, seed += 3);
    check_matmul({{70, 16387}, {24, 16387}, false, true, false, -1}, seed += 3);
    // Past a wave of one tile a core (2 tiles on 1 core): 2 slices of 8192
    // and a last of 3, where whole tiles would take one wave over an odd k.
    ScopedEnv one("FORGE_MATMUL_CORES", "1");
    EXPECT_EQ(webgpu::matmul_tiling(plan(200, 16387, 70, false, false), gpu_device()), "128x128 in 2 slices");
    check_matmul({{200, 16387}, {16387, 70}, false, false, true, -1}, seed += 3);
  }
  {
    // Two over k = 2048 where the tiles fill one to two waves of two a
    // core (a GPU of 1 core, 3 tiles), with B stored [n, k].
    ScopedEnv cores("FORGE_MATMUL_CORES", "1");
    EXPECT_EQ(webgpu::matmul_tiling(plan(128, 2048, 384, false, true), gpu_device()), "128x128 in 2 slices");
    check_matmul({{128, 2048}, {384, 2048}, false, true, true, -1}, seed += 3);
  }
  LoweredBindingLimit limit(192 * 512 * 4);
  check_matmul(square, seed += 3);
}

// 64x64 tiles in 8x8 invocations of 8x8 outputs (FORGE_MATMUL_THREADS=8):
// the tiling it names, then parity over batch items, each layout, A read as
// scalars, k no slice divides, k-slices and a bias.
TEST(Parity, MatmulEightByEightInvocations) {
  ScopedEnv threads("FORGE_MATMUL_THREADS", "8");
  EXPECT_EQ(webgpu::matmul_tiling(plan(100, 64, 64, false, false), gpu_device()), "64x64 of 8x8 invocations");
  const std::vector<MatmulCase> cases = {
      {{3, 64, 64}, {3, 64, 16}, false, false, false, -1},
      {{2, 96, 40}, {2, 96, 24}, true, false, true, -1},
      {{100, 68}, {36, 68}, false, true, true, -1},
      {{70, 33}, {44, 70}, true, true, false, -1},
      {{70, 1027}, {1027, 24}, false, false, true, -1},
      {{72, 1024}, {1024, 20}, false, false, true, -1},
  };
  uint32_t seed = 1300;
  for (const auto& c : cases) check_matmul(c, seed += 3);
}

// 128 x 64 tiles where B is stored [k, n] and 128 x 128 tiles would leave
// their last wave under 85% full (at one tile a core): the choice by shape
// and layout, then parity in that tiling, with a k no slice depth divides
// and, over two k-slices, a deep one.
TEST(Parity, MatmulNarrowTiles) {
  const Device gpu = gpu_device();
  {
    // 132 cores (the default): SmolLM2-360M's training products.
    EXPECT_EQ(webgpu::matmul_tiling(plan(2048, 960, 2560, false, false), gpu), "128x64");
    EXPECT_EQ(webgpu::matmul_tiling(plan(5120, 2048, 960, true, false), gpu), "128x64");
    EXPECT_EQ(webgpu::matmul_tiling(plan(960, 2048, 2560, true, false), gpu), "128x64 in 2 slices");
    // 4.8 waves of two a core: the last (112 tiles) in pieces, with B stored [k, n].
    EXPECT_EQ(webgpu::matmul_tiling(plan(2048, 960, 5120, false, false), gpu), "128x128, 112 tiles in 7 pieces");
    // B [n, k]: whole tiles where the last wave passes half the cores.
    EXPECT_EQ(webgpu::matmul_tiling(plan(2048, 960, 5120, false, true), gpu), "128x128");
    EXPECT_EQ(webgpu::matmul_tiling(plan(8192, 768, 768, false, true), gpu), "128x128");
    EXPECT_EQ(webgpu::matmul_tiling(plan(8192, 768, 768, false, false), gpu), "128x128, 120 tiles in 2 pieces");
    EXPECT_EQ(webgpu::matmul_tiling(plan(2048, 1600, 960, false, false), gpu), "128x128");  // 0.97 of one
    // B [n, k]: 1.2 waves of two a core, the last (56 tiles, under half the cores) in pieces.
    EXPECT_EQ(webgpu::matmul_tiling(plan(2048, 960, 2560, false, true), gpu), "128x128, 56 tiles in 4 pieces");
    // A weight's gradient over a deep k: 128 x 64 tiles in 4 slices, in 8
    // where they number under one a core; with A not transposed, 128 x 128.
    EXPECT_EQ(webgpu::matmul_tiling(plan(3072, 8192, 768, true, false), gpu), "128x64 in 4 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(768, 8192, 2304, true, false), gpu), "128x64 in 4 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(768, 8192, 768, true, false), gpu), "128x64 in 8 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(3072, 8192, 768, false, false), gpu), "128x128 in 4 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(1024, 960, 960, false, true), gpu), "128x128 in 2 slices");   // half a wave
    // The LM head's input gradient over GPT-2's vocabulary: 60 tiles fill a
    // wave of two a core in 4 slices; 192 (one a core) and 384 take 4 and 2
    // slices, where whole tiles would run a last wave in pieces over an odd k.
    EXPECT_EQ(webgpu::matmul_tiling(plan(1280, 50257, 768, false, false), gpu), "128x128 in 4 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(4096, 50257, 768, false, false), gpu), "128x128 in 4 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(8192, 50257, 768, false, false), gpu), "128x128 in 2 slices");
    // 384 tiles over k = 3072: B stored [n, k] in two slices; B stored
    // [k, n] whole, the last wave in pieces.
    EXPECT_EQ(webgpu::matmul_tiling(plan(8192, 3072, 768, false, true), gpu), "128x128 in 2 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(8192, 3072, 768, false, false), gpu), "128x128, 120 tiles in 2 pieces");
  }
  ScopedEnv cores("FORGE_MATMUL_CORES", "2");
  uint32_t seed = 1300;
  // 5 tiles of 128 x 128 on 2 cores: 83% of 3 waves.
  EXPECT_EQ(webgpu::matmul_tiling(plan(640, 200, 128, false, false), gpu), "128x64");
  check_matmul({{640, 200}, {200, 128}, false, false, true, -1}, seed += 3);
  EXPECT_EQ(webgpu::matmul_tiling(plan(640, 200, 128, true, false), gpu), "128x64");
  check_matmul({{200, 640}, {200, 128}, true, false, false, -1}, seed += 3);
  {
    // A weight's gradient over a deep k: on 16 cores 32 tiles of 128 x 64 in
    // 4 slices; on 64, 8 slices of k = 4100, the last short (parity); a LoRA
    // factor's (a side of 16) keeps the tiles it had.
    ScopedEnv sixteen("FORGE_MATMUL_CORES", "16");
    EXPECT_EQ(webgpu::matmul_tiling(plan(512, 4096, 512, true, false), gpu), "128x64 in 4 slices");
    EXPECT_EQ(webgpu::matmul_tiling(plan(960, 4096, 16, true, false), gpu).find("128x64"), std::string::npos);
    ScopedEnv sixty_four("FORGE_MATMUL_CORES", "64");
    EXPECT_EQ(webgpu::matmul_tiling(plan(512, 4100, 512, true, false), gpu), "128x64 in 8 slices");
    check_matmul({{4100, 512}, {4100, 512}, true, false, false, -1}, seed += 3);
  }
  // 3 tiles on 4 cores: 128 x 64 in two slices of k = 2048.
  ScopedEnv four_cores("FORGE_MATMUL_CORES", "4");
  EXPECT_EQ(webgpu::matmul_tiling(plan(384, 2048, 128, true, false), gpu), "128x64 in 2 slices");
  check_matmul({{2048, 384}, {2048, 128}, true, false, true, -1}, seed += 3);
}

// The last wave in pieces (matmul_pieces.wgsl and its fixup), forced, on a
// GPU of 2 cores (4 tiles a wave): whole tiles beside tiles split over k,
// every layout, a k that slices of 8 do not divide (slices of 16, the last
// short) and an A read as scalars (odd row stride).
TEST(Parity, MatmulLastWaveInPieces) {
  const Device gpu = gpu_device();
  ScopedEnv cores("FORGE_MATMUL_CORES", "2");
  uint32_t seed = 1400;
  {
    ScopedEnv pieces("FORGE_MATMUL_PIECES", "3");
    // 9 tiles: 8 whole, the ninth in 3 pieces of its 25 slices.
    EXPECT_EQ(webgpu::matmul_tiling(plan(300, 200, 260, false, false), gpu), "128x128, 1 tiles in 3 pieces");
    check_matmul({{300, 200}, {200, 260}, false, false, true, -1}, seed += 3);
    check_matmul({{200, 300}, {200, 260}, true, false, false, -1}, seed += 3);
    check_matmul({{300, 200}, {260, 200}, false, true, true, -1}, seed += 3);
    // k = 203: slices of 16, the 13th short; A's rows 203 apart (scalar loads).
    check_matmul({{300, 203}, {260, 203}, false, true, true, -1}, seed += 3);
    // 2 tiles (no whole wave), each in 3 pieces of 125 slices.
    EXPECT_EQ(webgpu::matmul_tiling(plan(130, 1000, 72, false, false), gpu), "128x128, 2 tiles in 3 pieces");
    check_matmul({{130, 1000}, {1000, 72}, false, false, true, -1}, seed += 3);
  }
  {
    // 6 pieces of the same tiles.
    ScopedEnv pieces("FORGE_MATMUL_PIECES", "6");
    EXPECT_EQ(webgpu::matmul_tiling(plan(130, 1000, 72, false, false), gpu), "128x128, 2 tiles in 6 pieces");
    check_matmul({{130, 1000}, {1000, 72}, false, false, true, -1}, seed += 3);
    check_matmul({{1000, 130}, {72, 1000}, true, true, false, -1}, seed += 3);
  }
  // Unforced: 5 tiles, one past a whole wave, alone on its core: in 4 pieces
  // (a wave of pieces, a quarter of one of tiles).
  EXPECT_EQ(webgpu::matmul_tiling(plan(640, 512, 128, false, true), gpu), "128x128, 1 tiles in 4 pieces");
  check_matmul({{640, 512}, {128, 512}, false, true, true, -1}, seed += 3);
}

// Tiles ordered by groups of rows of tiles (column by column within a
// group) compute the same products: a last group of fewer rows, both
// layouts of B, A unaligned (scalar loads), a batch, the whole tiles before
// a last wave in pieces and a causal triangle of C, each in that order and
// checked against the CPU.
TEST(Parity, MatmulTilesInGroupsOfRows) {
  const Device gpu = gpu_device();
  ScopedEnv cores("FORGE_MATMUL_CORES", "1");
  ScopedEnv group("FORGE_MATMUL_GROUP", "3");
  uint32_t seed = 1500;
  // 128x128 tiles: 4 rows of them (the last group 1 row), 2 columns.
  EXPECT_EQ(webgpu::matmul_tiling(plan(400, 96, 200, false, false), gpu), "128x128, groups of 3 rows");
  check_matmul({{400, 96}, {96, 200}, false, false, true, -1}, seed += 3);
  check_matmul({{400, 96}, {200, 96}, false, true, true, -1}, seed += 3);
  check_matmul({{96, 400}, {96, 200}, true, false, false, -1}, seed += 3);
  check_matmul({{400, 97}, {97, 200}, false, false, false, -1}, seed += 3);  // A's rows 97 apart
  check_matmul({{2, 400, 96}, {2, 96, 200}, false, false, false, -1}, seed += 3);
  // Two rows of tiles: fewer than a group, left in rows.
  EXPECT_EQ(webgpu::matmul_tiling(plan(128, 96, 640, false, false), gpu), "128x128");
  check_matmul({{128, 96}, {96, 640}, false, false, true, -1}, seed += 3);
  {
    // The whole tiles before a last wave in pieces: 3 x 3 tiles at 4 a
    // wave, the first two rows in one group, the ninth in 3 pieces.
    ScopedEnv two("FORGE_MATMUL_CORES", "2");
    ScopedEnv group2("FORGE_MATMUL_GROUP", "2");
    ScopedEnv pieces("FORGE_MATMUL_PIECES", "3");
    EXPECT_EQ(webgpu::matmul_tiling(plan(300, 200, 260, false, false), gpu),
              "128x128, 1 tiles in 3 pieces, groups of 2 rows");
    check_matmul({{300, 200}, {200, 260}, false, false, true, -1}, seed += 3);
    check_matmul({{300, 200}, {260, 200}, false, true, true, -1}, seed += 3);
  }
  // A lower triangle of C from grouped tiles (4 x 4): those above it are zeros.
  const Tensor a = random_tensor({512, 64}, seed += 3), b = random_tensor({512, 64}, seed += 3);
  MatmulOptions o;
  o.transpose_b = true;
  o.c_triangle = Triangle::Lower;
  const std::vector<float> want = matmul(a, b, o).to_vector<float>();
  const std::vector<float> got = matmul(a.to(gpu), b.to(gpu), o).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << i;
}

TEST(Values, MatmulSmallExact) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, d);
    Tensor b = Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2}, d);
    Tensor bias = Tensor::from_vector<float>({10, 20}, {2}, d);
    MatmulOptions o;
    o.bias = &bias;
    EXPECT_EQ(matmul(a, b, o).to_vector<float>(), (std::vector<float>{14, 25, 20, 31})) << d.name();
    o.transpose_a = true;  // a^T [3, 2] @ ... needs b [2, n]
    o.bias = nullptr;
    Tensor b2 = Tensor::from_vector<float>({1, 0, 0, 1}, {2, 2}, d);
    EXPECT_EQ(matmul(a, b2, o).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6})) << d.name();
  }
}

TEST(Validation, MatmulShapes) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
  try {
    matmul(a, b);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[matmul] inner dims differ"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 5]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4, 5})), ShapeError);  // batch differs
  EXPECT_THROW(matmul(Tensor::zeros({3}), Tensor::zeros({3, 4})), ShapeError);          // rank
  Tensor bias = Tensor::zeros({4});
  MatmulOptions o;
  o.bias = &bias;
  EXPECT_THROW(matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 5}), o), ShapeError);  // bias [n]
  o = {};
  o.b_rows = 9;
  EXPECT_THROW(matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 5}), o), ShapeError);  // b_rows > rows
  EXPECT_THROW(matmul(Tensor::zeros({2, 3}, DType::U32), Tensor::zeros({3, 5})), DTypeError);
  EXPECT_THROW(matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 5}).to(gpu_device())), DeviceError);
}

TEST(Validation, ElementwiseShapes) {
  try {
    add(Tensor::zeros({2, 3}), Tensor::zeros({3, 2}));
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "[add] shapes differ: a [2, 3], b [3, 2]");
  }
  EXPECT_THROW(add(Tensor::zeros({2}), Tensor::zeros({2}).to(gpu_device())), DeviceError);
  EXPECT_THROW(scale(Tensor::zeros({2}, DType::I32), 2.0f), DTypeError);
  EXPECT_THROW(add(Tensor(), Tensor::zeros({2})), Error);
}

TEST(Parity, Softmax) {
  struct Case {
    Shape s;
    SoftmaxOptions o;
  };
  std::vector<Case> cases = {
      {{1}, {}},
      {{3, 17}, {}},
      {{129, 3}, {}},
      {{2, 5, 1000}, {}},
      {{17, 17}, {true, 0, 0}},
      {{2, 3, 7, 7}, {true, 0, 0}},
      {{4, 3, 10}, {true, 3, 7}},  // 3 queries after 7 cached keys
      {{5, 1, 300}, {true, 1, 299}},
      // Rows past 4 values a lane (1,024 with 256 lanes) are read three
      // times instead of once into registers: both, and causal rows of each.
      {{2, 3000}, {}},
      {{1100, 1100}, {true, 0, 0}},
  };
  uint32_t seed = 500;
  for (const auto& c : cases) {
    // exp differs by a few ulps between libm and the GPU.
    EXPECT_TRUE(cpu_gpu_parity({random_tensor(c.s, seed++, -8.0f, 8.0f)},
                               [&](auto& in) { return softmax(in[0], c.o); }, 1e-7, 2e-6))
        << shape_str(c.s) << " causal " << c.o.causal;
  }
}

TEST(Values, SoftmaxCausalMasksExactly) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor x = Tensor::from_vector<float>({0, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 3}, d);
    SoftmaxOptions o;
    o.causal = true;
    auto y = softmax(x, o).to_vector<float>();
    std::vector<float> want{1, 0, 0, 0.5f, 0.5f, 0, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f};
    EXPECT_TRUE(all_close(y, want, 1e-7, 0)) << d.name();
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[5], 0.0f);
  }
}

TEST(Chunked, ElementwiseAndSoftmaxUnderLoweredBindingLimit) {
  // 4 KiB bindings: a 3 x 1000 tensor (12 KB) is split into several dispatches.
  gpu_device().runtime().set_binding_limit_for_testing(4096);
  Tensor a = random_tensor({3, 1000}, 7), b = random_tensor({3, 1000}, 8);
  EXPECT_TRUE(cpu_gpu_parity({a, b}, [](auto& in) { return add(in[0], in[1]); }, 0, 0));
  EXPECT_TRUE(cpu_gpu_parity({a}, [](auto& in) { return scale(in[0], 3.0f); }, 0, 0));
  Tensor x = random_tensor({40, 17}, 9);
  SoftmaxOptions o;
  o.causal = true;
  o.q_len = 8;
  EXPECT_TRUE(cpu_gpu_parity({x}, [&](auto& in) { return softmax(in[0], o); }, 1e-7, 2e-6));
  // A row larger than the limit cannot be split.
  EXPECT_THROW(softmax(random_tensor({2, 2000}, 3).to(gpu_device())).to_f32(), DeviceError);
  gpu_device().runtime().set_binding_limit_for_testing(0);
}

}  // namespace
