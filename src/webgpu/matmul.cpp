// Host side of matmul: the tiled kernels in tiles of 64 x 64, 128 x 128 or
// (vec4 only) 128 x 64, over vec4 loads
// (shaders/matmul_vec4.wgsl) when the operands are aligned and over scalars
// (shaders/matmul.wgsl) when B is not (A alone unaligned reads its vec4s as
// scalars), their size chosen by how well the grid fills the GPU, and a
// small output over a deep k split into k-slices summed by a second pass
// (shaders/matmul_split_k.wgsl); matrix-vector kernels for few rows
// (shaders/matvec_vec4.wgsl against an aligned B [n, k], shaders/matvec.wgsl
// otherwise). B may be bf16 (a dense weight kept in 16 bits): the vec4
// kernels (matrix-vector and tiles) widen it as they read it; the scalar
// ones (unaligned shapes) take a widened copy.
#include <algorithm>
#include <cstdlib>

#include "forge_shaders.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"
#include "webgpu/composed_kernel.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kMatmul{"matmul", {shaders::matmul_params, shaders::matmul_triangle, shaders::matmul}};
// matmul_vec4.wgsl for one weight dtype of B (its weights snippet): f32, or
// bf16 widened as it is fetched. `scalar_a`: the same tiles with A read as
// scalars, for an A whose row stride is not a multiple of 4 (the LM head's
// logit gradient, row stride the vocabulary).
// `pieces_a` / `pieces_sa`: the same tiles, the last wave's split over k
// (matmul_pieces.wgsl).
struct TileKernels {
  ComposedKernel vec4_a, scalar_a, pieces_a, pieces_sa;
  TileKernels(std::string_view name, std::string_view name_sa, std::string_view weights)
      : vec4_a{name, {shaders::matmul_params, shaders::matmul_triangle, shaders::matmul_a_vec4, shaders::gelu,
                      shaders::matmul_epilogue, weights, shaders::matmul_vec4}},
        scalar_a{name_sa, {shaders::matmul_params, shaders::matmul_triangle, shaders::matmul_a_scalar, shaders::gelu,
                           shaders::matmul_epilogue, weights, shaders::matmul_vec4}},
        pieces_a{name,
                 {shaders::matmul_params, shaders::matmul_triangle, shaders::matmul_a_vec4, shaders::gelu,
                  shaders::matmul_epilogue, weights, shaders::matmul_vec4, shaders::matmul_pieces},
                 "main_pieces"},
        pieces_sa{name_sa, {shaders::matmul_params, shaders::matmul_triangle, shaders::matmul_a_scalar, shaders::gelu,
                            shaders::matmul_epilogue, weights, shaders::matmul_vec4, shaders::matmul_pieces},
                  "main_pieces"} {}
};
const TileKernels kTilesF32{"matmul_vec4", "matmul_vec4_sa", shaders::weights_f32};
const TileKernels kTilesBf16{"matmul_vec4_bf16", "matmul_vec4_bf16_sa", shaders::weights_bf16};
const ComposedKernel kSplitKReduce{"matmul_split_k", {shaders::gelu, shaders::matmul_epilogue, shaders::matmul_partials,
                                                       shaders::elementwise_block, shaders::matmul_split_k}};
const ComposedKernel kPiecesFixup{"matmul_pieces_fixup",
                                  {shaders::gelu, shaders::matmul_epilogue, shaders::matmul_partials,
                                   shaders::matmul_pieces_fixup}};
// The matrix-vector kernels come in two sizes of MAX_ROWS (rows a workgroup
// computes, prepended as a constant): 4 for one sequence's decode step, whose
// registers and workgroup memory stay as small as they were tuned, and 8 for
// a batch of sequences. main_serial (one invocation a column) serves small k.
// Both carry the decode-step fusions (norm prologue, gelu, residual) after
// the snippets they come from, as matvec_vec4.wgsl does: GPT-2's Conv1D
// weights [k, n] take these kernels.
const ReducingKernel kMatvec{"matvec",
                             {shaders::matmul_params, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::gelu, shaders::matvec_fusions, shaders::matvec_kn_load, shaders::matvec_kn_store, shaders::matvec}};
const ReducingKernel kMatvec8{"matvec",
                              {shaders::matmul_params, "const MAX_ROWS: u32 = 8u;", shaders::norm_prologue, shaders::gelu, shaders::matvec_fusions, shaders::matvec_kn_load, shaders::matvec_kn_store, shaders::matvec}};
// main_kn with one load of B (its snippet: four scalars, or one vec4 where
// B's strides allow), storing C or, for a packed q/k/v row, q in C and k
// and v straight into their cache slots.
struct KnKernels {
  ReducingKernel store, append;
  KnKernels(std::string_view store_name, std::string_view append_name, std::string_view load)
      : store{store_name,
              {shaders::matmul_params, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::gelu,
               shaders::matvec_fusions, load, shaders::matvec_kn_store, shaders::matvec},
              "main_kn"},
        append{append_name,
               {shaders::matmul_params, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::gelu,
                shaders::matvec_fusions, load, shaders::matvec_kn_append, shaders::matvec},
               "main_kn"} {}
};
const KnKernels kKnScalar{"matvec_kn", "matvec_kn_append", shaders::matvec_kn_load};
const KnKernels kKnVec4{"matvec_kn4", "matvec_kn_append4", shaders::matvec_kn_load4};
const ReducingKernel kMatvecSerial{"matvec_serial",
                                   {shaders::matmul_params, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::gelu, shaders::matvec_fusions, shaders::matvec_kn_load, shaders::matvec_kn_store, shaders::matvec},
                                   "main_serial"};

// matvec_vec4.wgsl for one weight dtype (its weights snippet): f32, or bf16
// widened as it is read, which halves the bytes a decode step streams.
struct Vec4Kernels {
  ReducingKernel rows4, rows8, serial;
  explicit Vec4Kernels(std::string_view weights)
      : rows4{"matvec_vec4",
              {shaders::matmul_params, weights, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::gelu, shaders::matvec_fusions, shaders::matvec_vec4}},
        rows8{"matvec_vec4",
              {shaders::matmul_params, weights, "const MAX_ROWS: u32 = 8u;", shaders::norm_prologue, shaders::gelu, shaders::matvec_fusions, shaders::matvec_vec4}},
        serial{"matvec_vec4_serial",
               {shaders::matmul_params, weights, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::gelu, shaders::matvec_fusions, shaders::matvec_vec4},
               "main_serial"} {}
};
const Vec4Kernels kVec4F32{shaders::weights_f32};
const Vec4Kernels kVec4Bf16{shaders::weights_bf16};

struct MatmulParams {
  uint32_t m, n, k, lda, ldb, a_batch_stride, b_batch_stride;
  float alpha;
  uint32_t has_bias;
  uint32_t ldc;       // row stride of C
  uint32_t c_offset;  // elements of C before the first output
  uint32_t a_offset;  // elements of A before its first element
  // Batch items as (outer, head) pairs (MatmulPlan::heads).
  uint32_t heads, b_group, b_head_stride, c_batch_stride, c_head_stride;
  uint32_t split_from, pieces;  // matmul_pieces.wgsl's split tiles
  uint32_t pad;
};
static_assert(sizeof(MatmulParams) == 80);

constexpr int64_t kMatvecRows = 4;  // rows of one sequence's decode step (kMatvec*'s MAX_ROWS)
// Up to this many rows (a decode step of a batch of sequences) take the
// matrix-vector kernels, 8 rows a workgroup past 4: with n / 8 x m / 8
// workgroups they keep the GPU busy where 64x64 tiles would give n / 64.
// Only for real models' k (> kSerialMaxK): on a short k the 32 lanes of a
// column have little to sum, and 5-32 rows (a tiny model's training batch)
// cost far more as n / 8 x m / 8 reductions than as tiles (SwiftShader: a
// vocabulary-wide head over 32 rows and k = 64 took 6 s, tiled 0.1 s).
// Past two groups of 8 rows the tiles take over (see matvec_rows).
constexpr int64_t kBatchedMatvecRows = 16;
constexpr int64_t kMaxMatvecRows = 32;  // FORGE_MATVEC_ROWS's largest
constexpr int64_t kWideMatvecCols = 16384;  // see matvec_rows
// Up to this k a column's products are summed by one invocation
// (matvec.wgsl's main_serial): the tiny models of tests and short attention
// rows; real models' layers (k >= 512) keep the 32-lane kernels.
constexpr int64_t kSerialMaxK = 256;
constexpr int64_t kSerialGroup = 64;    // main_serial's workgroup size
// Rows main_serial takes (MAX_ROWS a workgroup row): a tiny model's training
// batch or re-prefill, whose 64x64 tiles and their barriers cost a CPU driver
// milliseconds each (SwiftShader: 16 ms for 32 x 32 x 96).
constexpr int64_t kSerialMaxRows = 64;
// main_serial forms a norm's statistics in every invocation (one a column),
// two or three passes over the row where the product makes one: past this
// many columns a separate norm dispatch costs less (SwiftShader: a tied LM
// head over 50257 columns at k = 64 with its LayerNorm fused took 29 ms a
// token, 13 ms with the norm its own pass).
constexpr int64_t kSerialNormMaxCols = 4096;
// The 32-lane kernels form a norm's statistics in every workgroup (8
// columns each): past this many columns (an LM head) the repeated
// statistics cost more than a norm dispatch of their own. On the H200,
// GPT-2 124M decoded at 1,117-1,122 tokens/s with ln_f fused into its
// 50,257-column head and 1,152-1,156 with it apart.
constexpr int64_t kNormFusedMaxCols = 16384;

// WebGPU reports no count of compute units, so the fill rules below assume a
// large discrete GPU: the H200's 132 SMs. FORGE_MATMUL_CORES overrides it
// (calibration on other GPUs); a smaller GPU is filled by any grid sized for
// a larger one, so the estimate errs on the large side.
int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}
// Read at each call (a getenv beside a dispatch), so that a test can stand
// in for a small GPU.
int64_t device_cores() { return std::max<int64_t>(1, env_int("FORGE_MATMUL_CORES", 132)); }
// Output columns a workgroup of the decode step's matrix-vector kernels
// (main_kn, matvec_vec4): 4 where a grid of `groups` workgroups of 8 would
// leave the cores under a wave, else 8; the environment variable `force`
// (4 or 8) overrides.
int64_t matvec_columns(int64_t groups, const char* force) {
  return env_int(force, groups < device_cores() ? 4 : 8) == 4 ? 4 : 8;
}
constexpr int64_t kTileSlots = 2;  // 128x128 tiles a core holds

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// matmul_vec4.wgsl reads each operand as vec4s along its contiguous dim:
// that dim, the strides and the offsets must be multiples of 4 (whole vec4s).
bool four(int64_t v) { return v % 4 == 0; }
bool a_aligned(const MatmulPlan& p) {
  return four(p.trans_a ? p.m : p.k) && four(p.lda) && four(p.a_batch_stride) && four(p.a_offset);
}
bool b_aligned(const MatmulPlan& p) {
  return four(p.trans_b ? p.k : p.n) && four(p.ldb) && four(p.b_batch_stride) && four(p.b_head_stride);
}
bool vec4_aligned(const MatmulPlan& p) { return a_aligned(p) && b_aligned(p); }
// The tiles' vec4 loader of A (matmul_a_vec4.wgsl) also takes an A whose
// contiguous dim alone is no multiple of 4, where its row stride leaves room
// for the last vec4 of a row within the row (A_TAIL): the LM head's logit
// gradient, its rows padded to whole vec4s.
bool a_tail(const MatmulPlan& p) {
  const int64_t dim = p.trans_a ? p.m : p.k;
  return !four(dim) && p.lda > 0 && four(p.lda) && four(p.a_batch_stride) && four(p.a_offset) &&
         p.a_offset % p.lda + (dim + 3) / 4 * 4 <= p.lda;
}
bool a_vec4_tiles(const MatmulPlan& p) { return a_aligned(p) || a_tail(p); }

// The tiled kernels alone take a triangle of A or of C.
bool triangles(const MatmulPlan& plan) {
  return plan.a_triangle != Triangle::Full || plan.c_triangle != Triangle::Full;
}

// matmul_triangle.wgsl's TRI / TRI_C for a triangle.
double triangle_constant(Triangle t) { return t == Triangle::Lower ? 1.0 : t == Triangle::Upper ? 2.0 : 0.0; }

// Whether the partial products of `splits` k-slices, [splits, m, n] and a
// short last slice's [m, n], fit one binding.
bool parts_fit(const MatmulPlan& p, int64_t splits, uint64_t binding_limit) {
  return uint64_t((splits + 1) * p.m * p.n) * 4 <= binding_limit;
}

// k-slices of 128x128 tiles (1 = none). Two where half a wave of them,
// split, fills one (a 1024 square: 64 tiles): on the H200 a 1024 square ran
// at 19.3 TFLOP/s so, against 16.4 in 64x64 tiles over 4 slices; 4 slices
// of 128x128 tiles made 18.0, 8 made 14.9, and a 2048 square (256 tiles)
// lost in 2 (35.3 against 38.7); SmolLM2-360M's o_proj at a 1024-token
// prefill, 1024x960x960 nt (64 tiles, slices of 480), 0.082 ms so against
// 0.107 in 64x64 tiles over 4 slices. Four over a deep k (4096 or more) where
// the tiles fill from 3/4 of a wave to two: GPT-2's weight gradients over
// 8192 rows, 768x8192x3072 and 3072x8192x768 tn (144 tiles), took 1.018 ms
// against 1.403 in 64x64 tiles over 4 slices and 1.213 in 128x128 over 2;
// 768x8192x2304 tn (108) 0.806 against 0.889 whole. Two over k of 2048 or
// more where they fill one to two waves of two a core, with B stored
// [n, k]: 8192x3072x768 nn (384 tiles) 0.99 ms against 1.22-1.26 whole (nt:
// 0.98 against 0.97-1.00) before the last wave ran in pieces
// (tile_pieces); with them, on an H100, nn 0.89 whole against 0.96 in two,
// 8192x2304x768 nn 0.68 against 0.75, so B stored [k, n] takes the pieces
// (nt, which takes no pieces there: 0.94 and 0.71-0.72 either way).
// Over a vocabulary-deep k (the LM head's input gradient, [rows, V] x
// [V, C]), as many slices as fill one wave of two tiles a core, whatever k's
// factors (slice_depth leaves a short last slice): 1280x50257x768 nn 4.03 ms
// in 64x64 tiles over 4 slices (the last a dispatch of its own) -> 2.52 in
// 4 slices of 128x128, SmolLM2's 1344x49152x960 6.24 -> 3.13. From a wave
// of one tile a core on (every row of a training batch in one LM-head
// block), 2 or 4 slices, whichever takes the fewest waves for the work
// (whole tiles over an odd k count as the slower slices of 16: see
// slice_depth_bk): on an H100 8192x50257x768 nn in whole tiles with the
// last wave in pieces took 21.3 ms.
constexpr int64_t kMaxSplits = 16;
constexpr int64_t kVocabDeepK = 16384;
int64_t vocab_deep_splits(const MatmulPlan& p, int64_t groups, uint64_t binding_limit) {
  const int64_t slots = kTileSlots * device_cores();
  int64_t best = 1;
  double best_cost = double(ceil_div(groups, slots)) * (p.k % 8 != 0 ? 1.35 : 1.0);
  for (int64_t s : {2, 4}) {
    const double cost = double(ceil_div(groups * s, slots)) / double(s);
    if (cost < best_cost && parts_fit(p, s, binding_limit)) best = s, best_cost = cost;
  }
  return best;
}
int64_t wave_splits(const MatmulPlan& p, uint64_t binding_limit) {
  const int64_t groups = ceil_div(p.m, 128) * ceil_div(p.n, 128), cores = device_cores();
  auto fits = [&](int64_t s) { return parts_fit(p, s, binding_limit); };
  if (p.batch != 1) return 1;
  const int64_t fill = std::min(kMaxSplits, 2 * cores / groups);
  if (p.k >= kVocabDeepK && fill >= 2 && groups * fill * 8 >= 2 * cores * 7 && fits(fill)) return fill;
  if (p.k >= kVocabDeepK && groups >= cores) return vocab_deep_splits(p, groups, binding_limit);
  const bool half_wave = groups * 2 <= cores && groups * 2 * 16 >= cores * 15;
  if (half_wave && fits(2) && p.k / 2 >= 256 && p.k % 16 == 0) return 2;
  const bool deep = p.k >= 4096 && p.k % 512 == 0;
  if (deep && groups * 4 >= cores * 3 && groups < 2 * cores && fits(4)) return 4;
  if (p.trans_b && p.k >= 2048 && p.k % 256 == 0 && groups >= 2 * cores && groups < 4 * cores && fits(2)) return 2;
  return 1;
}

// Output tile edge (64 or 128). A 128x128 tile does twice the work per value
// loaded, but a core holds only one or two, so the grid runs in waves of
// `cores` tiles: 128 when that grid fills its waves (at least 3/4 of the
// first and of the last) or its k-slices do (wave_splits), else 64x64
// tiles, several a core. On the H200 (forge bench
// matmul --shapes MxKxN): 2048x2560x960 nt (128 tiles of 128) 0.435 ms
// against 0.495 ms in 64x64 tiles; 2560x2048x960 tn (160: 1.2 waves) 0.542
// against 0.363; with slices of 8, 768x8192x2304 tn (108 tiles) 0.849 against
// 1.116, 3072x8192x768 tn (144) 1.532 against 1.342.
// FORGE_MATMUL_TILE=64|128 forces one (measurement).
int64_t tile_edge(const MatmulPlan& p, uint64_t binding_limit) {
  static const int64_t forced = env_int("FORGE_MATMUL_TILE", 0);
  if (forced == 64 || forced == 128) return forced;
  // Batched (attention's heads): a 128-wide tile over 64 rows or columns
  // computes half of it for nothing, and over k = 64 its 8 slices leave
  // loading and storing it unhidden. On the H200, GPT-2's training attention
  // (96 heads x 1024 queries x 64): [96, 1024, 64] products over a causal
  // triangle of k 532 -> 300 us, [96, 1024, 1024] over k = 64 696 -> 560 us
  // in 64x64 tiles. On an H100 the whole B8 x T1024 step, with every
  // batched product in 64x64 / 128x64 / 64x128 / 128x128 tiles: 197.0 /
  // 197.3 / 205.0 / 206.9 ms.
  if (p.batch > 1 && (p.m <= 64 || p.n <= 64 || p.k <= 64)) return 64;
  // A few rows (a batch of sequences' decode step) fill half a 64-row tile
  // at most; 128 rows would compute three quarters of nothing.
  if (p.m <= 64) return 64;
  const int64_t groups = ceil_div(p.m, 128) * ceil_div(p.n, 128) * p.batch, cores = device_cores();
  const int64_t waves = ceil_div(groups, cores);
  if (groups * 4 >= cores * 3 && groups * 4 >= waves * cores * 3) return 128;
  return wave_splits(p, binding_limit) > 1 ? 128 : 64;
}

// A weight's gradient over a deep k (A stored [k, m], B [k, n], k the
// batch's rows, 4096 or more) whose 128x128 tiles make under one wave of two
// a core: 128 x 64 tiles over 4 k-slices, or 8 where those tiles number
// under one a core. On an H100 (`forge bench matmul --layouts tn`, ms, as
// chosen before / in 128 x 64 over 4 / over 8), GPT-2's at B8 x T1024:
// 768x8192x768 0.361 (64x64 in 4 slices) / 0.343 / 0.297, 768x8192x2304
// 0.779-0.785 (128x128 in 4) / 0.748 / 0.766, 768x8192x3072 1.148-1.164 /
// 0.960 / 0.986, 3072x8192x768 1.150 / 0.954 / 0.967; 128x128 in 8 slices
// 0.427 / 0.830 / 1.028 / 1.034, 128 x 64 in 2 0.450 / 0.857 / 1.059 / 1.042.
// Only where both sides are 512 or more, as measured: a LoRA factor's
// gradient (a side of 8 to 64) would fill a fraction of each tile, in fewer
// workgroups than its 64x64 tiles over 16 slices.
bool deep_weight_gradient(const MatmulPlan& p) {
  return p.trans_a && !p.trans_b && p.batch == 1 && !triangles(p) && p.k >= 4096 && p.m >= 512 && p.n >= 512 &&
         ceil_div(p.m, 128) * ceil_div(p.n, 128) < kTileSlots * device_cores();
}

// The vec4 kernel's tiles, rows x columns: tile_edge square, or 128 x 64
// where B is stored [k, n] (nn, tn) and the 128 x 128 grid, at one tile a
// core, fills at least 3/4 of a wave but leaves its last wave under 85%
// full. On the H200, SmolLM2-360M's training products, ms in the tiles
// tile_edge picks / 128 x 64: 2048x960x2560 nn (320 tiles of 128: 2.4
// waves) 0.413 / 0.313, 5120x2048x960 tn (2.4) 0.626 / 0.532,
// 960x2048x2560 tn (1.2; 64 x 64 before) 0.350 / 0.291 (in 2 k-slices,
// split_k), 1600x2048x960 tn (0.8) 0.222 / 0.185 (2 slices); GPT-2's
// 1024-token prefill 1024x768x3072 nn (1.5) 0.188 / 0.162. Where the grid
// fills its waves they lose (2048x960x5120 nt, 4.8 waves: 0.498 / 0.629;
// 2048x1600x960 nn, 0.97: 0.185 / 0.214), under 3/4 of a wave too
// (1024x3072x768 nn, 0.36: 0.196 / 0.230), and with B stored [n, k] (nt:
// 2048x960x1600, 1.6: 0.215 / 0.291). A k of 4096 or more keeps the deep
// splits of wave_splits, except a weight's gradient (deep_weight_gradient).
// FORGE_MATMUL_TILE_N=64|128 forces the columns (measurement; the rows as
// FORGE_MATMUL_TILE or tile_edge).
struct Tiles {
  int64_t rows, cols;
};
Tiles vec4_tiles(const MatmulPlan& p, int64_t edge) {
  static const int64_t forced = env_int("FORGE_MATMUL_TILE_N", 0);
  if (forced == 64 || forced == 128) return {edge, forced};
  const bool edge_forced = env_int("FORGE_MATMUL_TILE", 0) != 0;
  if (deep_weight_gradient(p) && !edge_forced) return {128, 64};
  if (p.trans_b || p.batch != 1 || p.k >= 4096 || triangles(p) || edge_forced) return {edge, edge};
  const int64_t groups = ceil_div(p.m, 128) * ceil_div(p.n, 128), cores = device_cores();
  const int64_t waves = ceil_div(groups, cores);
  const bool narrow = groups * 4 >= cores * 3 && groups * 100 < waves * cores * 85;
  return narrow ? Tiles{128, 64} : Tiles{edge, edge};
}

// Invocations along each side of a vec4 tile's workgroup (matmul_vec4.wgsl's
// WGD): 16 (256 invocations of T x TN outputs), or, with
// FORGE_MATMUL_THREADS=8, 64x64 tiles in 8x8 invocations of 8x8 outputs
// over slices of 8 (each value read from workgroup memory feeds twice the
// sums it feeds in 4x4 outputs, at a quarter of the invocations a tile). A
// measurement switch, not yet timed on a GPU: attention's batched products
// (64x64 tiles of 4x4 outputs, about 22 TFLOP/s in GPT-2's training) are
// what it is for.
int64_t tile_threads(int64_t rows, int64_t cols) {
  if (rows != 64 || cols != 64) return 16;
  return env_int("FORGE_MATMUL_THREADS", 16) == 8 ? 8 : 16;
}

// The depth of the vec4 tiles' k slices (matmul_vec4.wgsl's BK) for tiles of
// `tile` x `tile_n` over depth k. 128x128 tiles take slices of 8 where k is a
// multiple of 8: with no check of k their threads fit in the registers that
// let a core hold two workgroups. On the H200, 4096 / 8192 squares (nn) ran
// at 43-45 TFLOP/s in slices of 8 against 32-33 in 16, GPT-2's 8192x768x2304
// at 34 against 30; with k = 4100 (checked) slices of 16 did better, 31
// against 28. 64x64 tiles keep 16 (256 vec4s, one a thread), and 128x64
// tiles too (as fast as 8 or faster on SmolLM2-360M's products). Measured and
// rejected: slices of 32 (31 TFLOP/s), two buffers of workgroup memory with
// one barrier a slice (31-37: no gain), each warp as 4 x 8 threads instead
// of 2 x 16 (no change), 128x256 tiles (registers spilled: 2 TFLOP/s).
// FORGE_MATMUL_BK=8|16 forces it (measurement).
int64_t slice_depth_bk(int64_t tile, int64_t tile_n, int64_t k) {
  static const int64_t forced = env_int("FORGE_MATMUL_BK", 0);
  if (forced == 8 || forced == 16) return forced;
  return tile == 128 && tile_n == 128 && k % 8 == 0 ? 8 : 16;
}

// Slices of k computed as separate workgroups (split-K) for a small output
// in 64x64 tiles with a deep k (a weight gradient, k = the batch's rows; the
// LM head's input gradient, k = the vocabulary), whose tiles alone leave
// cores idle: a tile's time grows with k, not with how many tiles run beside
// it. Below two workgroups a core, the fewest splits (a power of two) that
// give four, each slice at least kMinSplitK deep, the partial products
// [splits, m, n] within one binding. 1 = no split. FORGE_MATMUL_SPLIT_K
// forces a count where the shape allows (measurement). On the H200:
// 192x2048x576 tn 0.108 ms whole, 0.056 ms in 8 slices; 320x2048x960 tn
// 0.108 / 0.090 ms in 4; 2048x960x320 nt 0.117 / 0.093 ms in 4; but
// 2048x576x576 nt (288 tiles) 0.106 / 0.137 ms in 2.
// 128 x 64 tiles (vec4_tiles) take two slices of a k of 2048 or more where
// they make under 2.5 waves (960x2048x2560 tn, 320 tiles: 0.332 ms whole,
// 0.291 in two; 5120x2048x960 tn, 600 tiles: 0.532 whole, 0.559 in two).
constexpr int64_t kMinSplitK = 128;
int64_t split_k(const MatmulPlan& p, int64_t tile, int64_t tile_n, uint64_t binding_limit) {
  // A triangle's k range depends on the tile's rows, not on a slice's place.
  if (p.batch != 1 || triangles(p)) return 1;
  auto allowed = [&](int64_t s) { return parts_fit(p, s, binding_limit); };
  static const int64_t forced = env_int("FORGE_MATMUL_SPLIT_K", 0);
  if (forced > 0) return p.k / forced >= 64 && allowed(forced) ? forced : 1;
  if (tile == 128 && tile_n == 64) {
    const int64_t groups = ceil_div(p.m, 128) * ceil_div(p.n, 64);
    if (deep_weight_gradient(p)) {
      const int64_t want = groups < device_cores() ? 8 : 4;
      return allowed(want) ? want : allowed(4) ? 4 : 1;
    }
    return groups * 2 <= 5 * device_cores() && p.k >= 2048 && p.k % 256 == 0 && allowed(2) ? 2 : 1;
  }
  if (tile != 64) return wave_splits(p, binding_limit);
  const int64_t groups = ceil_div(p.m, tile) * ceil_div(p.n, tile);
  if (groups >= 2 * device_cores()) return 1;
  const int64_t want = 4 * device_cores();
  int64_t best = 1;
  for (int64_t s = 2; s <= kMaxSplits && groups * best < want; s *= 2) {
    if (p.k / s < kMinSplitK || !allowed(s)) break;
    best = s;
  }
  return best;
}

// The depth of each slice for `splits` of k: k / splits when that is whole
// vec4s (one dispatch), else a multiple of 64, so that the last, shorter
// slice's B starts at a binding offset that is a multiple of 256 bytes. That
// last slice is a second dispatch, serialized after the first, so the depth
// rounds down where that leaves it short (at most an eighth of a slice: the
// LM head's 50,257 in 4 x 12,544 + 81) and up otherwise. On the H200
// 2048x960x320 nt took 0.158 ms in slices of 256 + 192, 0.093 ms in 4 x 240
// (another run).
int64_t slice_depth(int64_t k, int64_t splits) {
  if (k % splits == 0 && four(k / splits)) return k / splits;
  const int64_t down = k / splits / 64 * 64;
  if (down > 0 && (k - splits * down) * 8 <= down) return down;
  return ceil_div(ceil_div(k, splits), 64) * 64;
}

// matmul_partials.wgsl's parameter block (the split-K reduction's and the
// pieces' fixup's).
struct PartialsParams {
  uint32_t m, n, splits, has_bias, ldc, c_offset, split_from, pad;
};
static_assert(sizeof(PartialsParams) == 32);

// The last wave of a grid of 128x128 tiles in pieces (matmul_pieces.wgsl):
// the GPU holds kTileSlots of these tiles a core, so a grid of w full waves
// and rem < slots tiles more takes w + 1 waves' time. The whole waves stay
// tiles; each of the rem tiles is summed in `pieces` k-ranges, as many as
// fill the last wave best (fewest waves of pieces for their size, at least
// kMinPieceSlices slices of k each). Taken where that beats the last wave
// of whole tiles: rem tiles alone take about kLoneWave of a full wave's time
// when they are at most one a core (nothing shares their cores), a whole
// wave's otherwise; the pieces cost their waves plus kPieceCost (their
// partial sums' stores and the fixup pass). pieces = 1: none.
// On the H200 (`forge bench matmul --shapes`, ms, whole tiles / last wave
// in pieces, one command): SmolLM2-360M's gate/up at a 1024-token prefill,
// 1024x960x5120 nt (56 tiles past a wave) 0.315 / 0.286; GPT-2's training
// products 8192x768x2304 nn 0.810 / 0.684, 8192x768x768 nn 0.335 / 0.260,
// 8192x768x3072 nn 0.976 / 0.924; an 8192 square nn 24.26 / 23.00 (47.8
// TFLOP/s). With B stored [n, k] and a last wave of 96 to 216 tiles they
// lost (8192x768x768 nt 0.263 / 0.281, x2304 0.689 / 0.745, x3072 0.906 /
// 1.008), so that layout takes pieces only for a last wave of at most half
// the cores.
// FORGE_MATMUL_PIECES=0 turns it off, =N forces N pieces wherever the plan
// allows (measurement).
// Measured and rejected first: stream-K, G = 264 workgroups looping over
// equal shares of every tile's k-slices. Its loop's bookkeeping, live
// across the sums, cost the register room for a second workgroup a core:
// on the H200 an 8192 square took 35.8 ms against 24.2 in whole tiles,
// 1024x960x5120 nt 0.359 against 0.313 (with the run's place kept in
// workgroup memory; 41.1 and 0.420 before), though the deep-k weight
// gradients gained (768x8192x3072 tn 0.921 against 1.142).
constexpr int64_t kMinPieceSlices = 16;
constexpr int64_t kMaxPieces = 8;
constexpr double kLoneWave = 0.64, kPieceCost = 0.08;
struct TilePieces {
  int64_t split_from = 0, pieces = 1;
  int64_t split = 0;  // tiles from split_from on, each in `pieces`
};
TilePieces tile_pieces(const MatmulPlan& p, uint64_t binding_limit) {
  const int64_t forced = env_int("FORGE_MATMUL_PIECES", -1);
  if (forced == 0 || forced == 1 || p.batch != 1 || triangles(p) || p.m <= 64) return {};
  const int64_t tiles = ceil_div(p.m, 128) * ceil_div(p.n, 128), cores = device_cores(), slots = kTileSlots * cores;
  const int64_t split_from = tiles / slots * slots, rem = tiles - split_from;
  const int64_t slices = ceil_div(p.k, slice_depth_bk(128, 128, p.k));
  if (rem == 0) return {};
  auto fits = [&](int64_t s) { return uint64_t(rem * s) * 128 * 128 * 4 <= binding_limit && slices >= s; };
  if (forced >= 2) return fits(forced) ? TilePieces{split_from, forced, rem} : TilePieces{};
  // Past one whole wave, and only where whole 128x128 tiles would be taken
  // (the narrower tiles and the k-slices above have their own measured
  // cases).
  if (split_from == 0) return {};
  // B stored [n, k] only where the last wave is at most half the cores:
  // there whole tiles alone on their cores ran faster than with B stored
  // [k, n], and pieces lost (see above).
  if (p.trans_b && rem * 2 > cores) return {};
  const Tiles whole = vec4_tiles(p, tile_edge(p, binding_limit));
  if (whole.rows != 128 || whole.cols != 128 || split_k(p, 128, 128, binding_limit) != 1) return {};
  int64_t best = 1;
  double best_cost = rem <= cores ? kLoneWave : 1.0;
  for (int64_t s = 2; s <= kMaxPieces && slices / s >= kMinPieceSlices && fits(s); ++s) {
    const double cost = double(ceil_div(rem * s, slots)) / double(s) + kPieceCost;
    if (cost < best_cost) best = s, best_cost = cost;
  }
  return best == 1 ? TilePieces{} : TilePieces{split_from, best, rem};
}

// The rows of tiles each group of a plan's grid of tile_rows x tile_cols
// tiles takes (matmul_vec4.wgsl's GROUP_ROWS; 0: row by row). Only a grid of
// more than one wave with more rows of tiles than a group is ordered by
// groups: a smaller one runs at once whatever its order.
// FORGE_MATMUL_GROUP=N forces N (measurement).
constexpr int64_t kGroupRows = 0;
int64_t tile_group_rows(const MatmulPlan& p, int64_t tile_rows, int64_t tile_cols) {
  const int64_t rows = env_int("FORGE_MATMUL_GROUP", kGroupRows);
  const int64_t grid_rows = ceil_div(p.m, tile_rows), grid_cols = ceil_div(p.n, tile_cols);
  if (rows <= 1 || grid_rows <= rows || grid_cols * grid_rows <= kTileSlots * device_cores()) return 0;
  return rows;
}

// Row counts the 32-lane matrix-vector kernels take past main_serial's k:
// one sequence's decode step, or a batch's against B [n, k] (the Llama
// family's weights, read as rows). A batch against B [k, n] (GPT-2's Conv1D
// weights) takes the tiles and split-K instead: each row group re-read
// strided columns of B, and on the H200 GPT-2 124M decoded 32 sequences at
// 8,919 tokens/s that way, 12,500 in tiles (8: 2,948 and 3,888).
// More than one group of 8 rows against a vocabulary-wide B (an LM head)
// takes the tiles too: the 8-row kernel reads 8 vec4s of A for each of B,
// and each row group reads B again. On the H200 GPT-2 124M's head over 32
// rows took 437-451 us that way (also with the row groups of a column block
// adjacent in the grid, to share B through the cache: no gain), and 32
// sequences decoded at 15.37-15.47k tokens/s against 17.45-17.46k in 64x64
// tiles (SmolLM2-360M 4.24k against 4.37k).
// Every Linear over 17-32 rows takes the tiles likewise: f32 SmolLM2-360M
// decoded 32 sequences at 5.90-5.92k tokens/s that way, 4.39-4.40k in groups
// of 8 rows (24 sequences: 4.54k against 4.13k). At 16 rows the two were
// within 3% (the groups ahead), so 9-16 rows keep the groups. bf16 weights
// in tiles that widened a copy of each weight first already read 4.79k at 32
// sequences against the groups' 4.50k (at 16, 2.47k against 3.27k: the
// copies); the tiles now read bf16 as they fetch it, with no copy.
// FORGE_MATVEC_ROWS=N (measurement) sets the rows the groups take.
bool matvec_rows(const MatmulPlan& plan) {
  if (triangles(plan)) return false;
  if (plan.m > 8 && plan.n >= kWideMatvecCols) return false;
  static const int64_t batched = std::min(kMaxMatvecRows, env_int("FORGE_MATVEC_ROWS", kBatchedMatvecRows));
  return plan.m <= kMatvecRows || (plan.m <= batched && plan.k > kSerialMaxK && plan.trans_b);
}

// Few rows over a small k: main_serial (one invocation a column) takes them.
bool serial_rows(const MatmulPlan& plan) {
  return plan.m <= kSerialMaxRows && !plan.trans_a && plan.k <= kSerialMaxK && !triangles(plan);
}

// The vec4 matrix-vector kernels (matvec_vec4.wgsl) take this plan.
bool vec4_matvec(const MatmulPlan& plan) {
  const bool serial = serial_rows(plan);
  return !plan.trans_a && plan.trans_b && vec4_aligned(plan) && (serial || matvec_rows(plan));
}

// The scalar matrix-vector kernels (matvec.wgsl) take this plan.
bool scalar_matvec(const MatmulPlan& plan) {
  const bool serial = serial_rows(plan);
  return !plan.trans_a && (serial || matvec_rows(plan));
}

// The k-slices of split-K for a plan in tiles (vec4_tiles, split_k,
// slice_depth): `full` slices of depth kc, then a shorter `tail` (0: none).
struct KSlices {
  int64_t splits, kc, full, tail;
};
KSlices k_slices(const MatmulPlan& plan, const Tiles& t, uint64_t binding_limit) {
  const int64_t splits = split_k(plan, t.rows, t.cols, binding_limit);
  const int64_t kc = splits == 1 ? plan.k : slice_depth(plan.k, splits), full = plan.k / kc;
  return {splits, kc, full, plan.k - full * kc};
}

// Bytes of B before the short last k-slice, where that slice is bound.
uint64_t tail_b_offset(const MatmulPlan& plan, const KSlices& s, uint64_t elem_bytes) {
  return uint64_t(s.full) * uint64_t(plan.trans_b ? s.kc : s.kc * plan.ldb) * elem_bytes;
}

// Whether the vec4 tiles read this plan's B as bf16: B aligned for them, and
// a short last k-slice's B bound at an allowed offset (a bf16 slice of kc =
// 64 rows along k is 128 bytes).
bool tiles_read_bf16(const MatmulPlan& plan, const gpu::Runtime& rt) {
  if (!b_aligned(plan) || std::getenv("FORGE_MATMUL_SCALAR")) return false;
  const uint64_t limit = rt.binding_limit();
  const KSlices s = k_slices(plan, vec4_tiles(plan, tile_edge(plan, limit)), limit);
  return s.tail == 0 || tail_b_offset(plan, s, 2) % rt.limits().storage_offset_alignment == 0;
}

}  // namespace

MatvecFusion matvec_fusion(const RowNorm* norm, const Tensor* residual, bool gelu) {
  MatvecFusion f;
  if (norm) {
    f.norm = norm->weight;
    f.eps = norm->eps;
    f.layer = norm->layer;
    f.norm_bias = norm->bias;
  }
  f.residual = residual;
  f.gelu = gelu;
  return f;
}

bool matvec_fusable(const MatmulPlan& plan, const MatvecFusion& f, bool cpu_driver) {
  if (!(vec4_matvec(plan) || scalar_matvec(plan)) || plan.m == 0 || plan.n == 0 || plan.k == 0) return false;
  // The norm's weight and bias are read as vec4s; the residual at C's own
  // index; one batch element (the statistics are of A's rows).
  if (f.norm && plan.k % 4 != 0) return false;
  const bool serial = serial_rows(plan);
  if (f.norm && serial && plan.n > kSerialNormMaxCols) return false;
  // A CPU driver centres and scales every value of A in each column's
  // invocations, costing more than the pass it saves (SwiftShader, GPT-2
  // 124M decode: the products 1.3x and the LM head 1.5x slower with their
  // LayerNorms fused): the norm stays its own dispatch there.
  if (f.norm && f.layer && cpu_driver) return false;
  if (f.norm && plan.n > kNormFusedMaxCols) return false;
  return plan.batch == 1;
}

namespace {

// Whether matmul runs this plan on the vec4 tiles (with their epilogues),
// not the matrix-vector or scalar kernels, C's items dense [m, n].
bool vec4_tiles_with_dense_c(const MatmulPlan& plan) {
  if ((plan.ldc != 0 && plan.ldc != plan.n) || plan.c_offset != 0) return false;
  if (plan.c_batch_stride != 0 || plan.c_head_stride != 0) return false;
  const bool matvec = !plan.trans_a && matvec_rows(plan);
  return !serial_rows(plan) && !matvec && b_aligned(plan) && !std::getenv("FORGE_MATMUL_SCALAR");
}

}  // namespace

bool tile_fusable(const MatmulPlan& plan, const MatvecFusion& f) {
  if (f.norm || f.k_cache || plan.batch != 1 || triangles(plan)) return false;
  return vec4_tiles_with_dense_c(plan);
}

bool tiles_accumulate(const MatmulPlan& plan) { return vec4_tiles_with_dense_c(plan); }

std::string matmul_tiling(const MatmulPlan& plan, const Device& dev) {
  const uint64_t limit = dev.runtime().binding_limit();
  if (b_aligned(plan) && !std::getenv("FORGE_MATMUL_SCALAR")) {
    const TilePieces pieces = tile_pieces(plan, limit);
    if (pieces.pieces > 1) {
      const int64_t group_rows = tile_group_rows(plan, 128, 128);
      return "128x128, " + std::to_string(pieces.split) + " tiles in " + std::to_string(pieces.pieces) + " pieces" +
             (group_rows > 0 ? ", groups of " + std::to_string(group_rows) + " rows" : "");
    }
  }
  const Tiles t = vec4_tiles(plan, tile_edge(plan, limit));
  const int64_t splits = split_k(plan, t.rows, t.cols, limit);
  const int64_t group_rows = tile_group_rows(plan, t.rows, t.cols);
  std::string tiles = std::to_string(t.rows) + "x" + std::to_string(t.cols);
  if (tile_threads(t.rows, t.cols) == 8) tiles += " of 8x8 invocations";
  if (splits > 1) tiles += " in " + std::to_string(splits) + " slices";
  if (group_rows > 0) tiles += ", groups of " + std::to_string(group_rows) + " rows";
  return tiles;
}

bool matvec_qkv_append(const Tensor& x, const Tensor& w, const Tensor* bias, const MatvecFusion* fuse, Tensor& q,
                       Tensor& k_cache, Tensor& v_cache, int64_t at) {
  const Device& dev = q.device();
  const gpu::Runtime& rt = dev.runtime();
  const int64_t k = w.dim(0), n = w.dim(1), C = n / 3;
  MatmulPlan plan;
  plan.m = 1, plan.n = n, plan.k = k, plan.lda = k, plan.ldb = n;
  // main_kn's plan (one row, k past main_serial's, whole vec4s of columns)
  // with f32 weights; the fusions as matmul takes them.
  if (w.dtype() != DType::F32 || k <= kSerialMaxK || n % 12 != 0) return false;
  if (fuse && !matvec_fusable(plan, *fuse, rt.cpu_driver())) return false;
  // A, B, bias, q, the residual's and the norm's stand-ins, and the two slots.
  if (rt.limits().max_storage_buffers_per_stage < 9) return false;
  const uint64_t align = rt.limits().storage_offset_alignment, slot = uint64_t(at) * uint64_t(C) * 4;
  for (const Tensor* t : std::initializer_list<const Tensor*>{&x, &w, &q, &k_cache, &v_cache})
    if (t->byte_offset() % align != 0) return false;
  if (slot % align != 0 || w.nbytes() > rt.binding_limit()) return false;
  MatvecFusion f = fuse ? *fuse : MatvecFusion{};
  f.k_cache = &k_cache;
  f.v_cache = &v_cache;
  f.slot = slot;
  matmul(x, w, bias, plan, q, &f);
  return true;
}

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out,
            const MatvecFusion* fuse) {
  if (fuse && !matvec_fusable(plan, *fuse, out.device().runtime().cpu_driver()) && !tile_fusable(plan, *fuse))
    throw DeviceError("[matmul] internal: a norm or residual fusion on a plan no kernel takes it on");
  if (plan.accumulate && !tiles_accumulate(plan))
    throw DeviceError("[matmul] internal: an accumulating product on a plan the tiles do not take");
  if (plan.m == 0 || plan.n == 0 || (plan.k == 0 && plan.accumulate)) return;
  const int64_t ldc = plan.ldc ? plan.ldc : plan.n;
  if (plan.k == 0 && ldc == plan.n && plan.c_offset == 0) {
    // The kernel would write alpha * 0 (+ bias); the empty sum is clearer spelled out.
    out.device().runtime().clear(out.buffer(), out.byte_offset(), (out.nbytes() + 3) / 4 * 4);
  }
  const auto& limits = out.device().runtime().limits();
  if (plan.batch > limits.max_workgroups_per_dim)
    throw DeviceError("[matmul] batch " + std::to_string(plan.batch) + " exceeds the device's grid limit");
  if (plan.heads < 1 || plan.b_group < 1 || plan.batch % plan.heads != 0 || plan.heads % plan.b_group != 0)
    throw DeviceError("[matmul] internal: batch " + std::to_string(plan.batch) + " as " + std::to_string(plan.heads) +
                      " heads in groups of " + std::to_string(plan.b_group));
  // C dense [batch, m, ldc] unless the plan places its items.
  const bool c_dense = plan.c_batch_stride == 0 && plan.c_head_stride == 0;
  const int64_t c_batch_stride = c_dense ? plan.heads * plan.m * ldc : plan.c_batch_stride;
  const int64_t c_head_stride = c_dense ? plan.m * ldc : plan.c_head_stride;
  MatmulParams p{uint32_t(plan.m), uint32_t(plan.n), uint32_t(plan.k), uint32_t(plan.lda), uint32_t(plan.ldb),
                 uint32_t(plan.a_batch_stride), uint32_t(plan.b_batch_stride), plan.alpha,
                 bias ? 1u : 0u, uint32_t(ldc), uint32_t(plan.c_offset), uint32_t(plan.a_offset),
                 uint32_t(plan.heads), uint32_t(plan.b_group), uint32_t(plan.b_head_stride),
                 uint32_t(c_batch_stride), uint32_t(c_head_stride), 0, 1, 0};
  const bool bf16 = b.dtype() == DType::BF16;
  const bool vec4_rows = !plan.trans_a && plan.trans_b && vec4_aligned(plan);
  const bool serial = serial_rows(plan);
  const bool matvec = !plan.trans_a && matvec_rows(plan);
  if (bf16 && !((serial || matvec) ? vec4_rows : tiles_read_bf16(plan, out.device().runtime()))) {
    // The vec4 kernels read bf16 (the matrix-vector ones and the tiles);
    // the scalar ones (unaligned shapes) take one widened copy of B.
    Tensor wide = Tensor::empty(b.shape(), DType::F32, b.device());
    widen_bf16(b, wide);
    matmul(a, wide, bias, plan, out, fuse);
    return;
  }
  const Vec4Kernels& vec4k = bf16 ? kVec4Bf16 : kVec4F32;
  const gpu::Runtime& rt = out.device().runtime();
  std::initializer_list<gpu::Arg> args{arg(a), arg(b), bias ? arg(*bias) : arg(a), arg(out)};
  // The matrix-vector kernels also bind the residual and the norm's weight
  // and bias; where unused, A stands in (a vec4 at least: a scalar kernel's A
  // may be shorter, then a small tensor of its own).
  const Tensor* residual = fuse ? fuse->residual : nullptr;
  const Tensor* norm = fuse ? fuse->norm : nullptr;
  const Tensor* norm_bias = fuse ? fuse->norm_bias : nullptr;
  const Tensor filler = a.nbytes() >= 16 ? a : Tensor::empty({4}, DType::F32, a.device());
  // The last two: main_kn's cache slots where it stores k and v (bound only then).
  const bool kv_slots = fuse && fuse->k_cache;
  const uint64_t slot_bytes = uint64_t(plan.n / 3) * 4;
  const std::array<gpu::Arg, 9> matvec_args{arg(a),
                                            arg(b),
                                            bias ? arg(*bias) : arg(a),
                                            arg(out),
                                            residual ? arg(*residual) : arg(filler),
                                            norm ? arg(*norm) : arg(filler),
                                            norm_bias ? arg(*norm_bias) : arg(filler),
                                            kv_slots ? arg(*fuse->k_cache, fuse->slot, slot_bytes) : arg(filler),
                                            kv_slots ? arg(*fuse->v_cache, fuse->slot, slot_bytes) : arg(filler)};
  const std::span<const gpu::Arg> vec4_args(matvec_args.data(), 7);
  // The fusions' constants; the scalar kernels (matvec.wgsl) also take TRANS_B.
  const std::array<gpu::Constant, 6> scalar_fusion{{{"NORM", !norm ? 0.0 : fuse->layer ? 2.0 : 1.0},
                                                    {"NORM_EPS", fuse ? double(fuse->eps) : 1e-5},
                                                    {"NORM_BIAS", norm_bias ? 1.0 : 0.0},
                                                    {"GELU", fuse && fuse->gelu ? 1.0 : 0.0},
                                                    {"RESIDUAL", residual ? 1.0 : 0.0},
                                                    {"TRANS_B", plan.trans_b ? 1.0 : 0.0}}};
  const std::span<const gpu::Constant> fusion(scalar_fusion.data(), 5);
  const bool kn = matvec && !plan.trans_b && plan.m <= kMatvecRows && plan.n % 4 == 0 && !serial;
  if (kv_slots && !kn)
    throw DeviceError("[matmul] internal: a cache-slot store on a plan main_kn does not take");
  if (serial) {
    const std::array<uint32_t, 3> groups{uint32_t(ceil_div(plan.n, kSerialGroup)), uint32_t(ceil_div(plan.m, kMatvecRows)),
                                         uint32_t(plan.batch)};
    if (vec4_rows) launch(out.device(), "matmul", vec4k.serial.kernel(rt), p, vec4_args, groups, fusion);
    else launch(out.device(), "matmul", kMatvecSerial.kernel(rt), p, vec4_args, groups, scalar_fusion);
    return;
  }
  if (matvec && vec4_rows) {
    // Few rows against B [n, k] (every Linear layer's decode step): each
    // column's row of B read in vec4s by 32 lanes, 8 columns a workgroup;
    // or by 64 lanes, 4 columns a workgroup, where 8 would leave the grid
    // under a wave of the cores, as main_kn does for GPT-2
    // (FORGE_MATVEC_COLS=4|8 forces one). That is the Llama family's o_proj
    // and down product at hidden sizes under 1056: on an H100 SmolLM2-135M
    // decoded at 839.4 / 839.7 tokens/s so against 801.9 / 802.3 in 8
    // columns, SmolLM2-360M at 627.4 / 627.6 against 591.7 / 594.1.
    const int64_t rows = plan.m <= kMatvecRows ? kMatvecRows : 8;
    const int64_t cols = matvec_columns(ceil_div(plan.n, 8) * ceil_div(plan.m, rows) * plan.batch, "FORGE_MATVEC_COLS");
    const std::array<gpu::Constant, 6> vec4_constants{
        {fusion[0], fusion[1], fusion[2], fusion[3], fusion[4], {"LANES", double(256 / cols)}}};
    launch(out.device(), "matmul", (rows == 4 ? vec4k.rows4 : vec4k.rows8).kernel(rt), p, vec4_args,
           {uint32_t(ceil_div(plan.n, cols)), uint32_t(ceil_div(plan.m, rows)), uint32_t(plan.batch)}, vec4_constants);
    return;
  }
  if (kn) {
    // Up to 4 rows against B [k, n] (GPT-2's Conv1D weights): 4 adjacent
    // columns an invocation, 8 a workgroup with k split 128 ways, or 4 split
    // 256 ways where 8 would leave the grid under a wave of the cores
    // (FORGE_MATMUL_KN_COLS=4|8 forces one). B read as vec4s where its
    // strides allow (FORGE_MATMUL_SCALAR: as scalars).
    const int64_t cols = matvec_columns(ceil_div(plan.n, 8) * plan.batch, "FORGE_MATMUL_KN_COLS");
    const bool b4 = b_aligned(plan) && !std::getenv("FORGE_MATMUL_SCALAR");
    const KnKernels& kn_kernels = b4 ? kKnVec4 : kKnScalar;
    const ReducingKernel& kernel = kv_slots ? kn_kernels.append : kn_kernels.store;
    const std::array<gpu::Constant, 6> kn_constants{
        {fusion[0], fusion[1], fusion[2], fusion[3], fusion[4], {"KN_CG", double(cols / 4)}}};
    launch(out.device(), "matmul", kernel.kernel(rt), p,
           kv_slots ? std::span<const gpu::Arg>(matvec_args) : vec4_args,
           {uint32_t(ceil_div(plan.n, cols)), 1u, uint32_t(plan.batch)}, kn_constants);
    return;
  }
  if (matvec) {
    // Few rows (decode): read B once, coalesced, splitting k across lanes.
    const int64_t cols = 8;  // matvec.wgsl's COLS
    const int64_t rows = plan.m <= kMatvecRows ? kMatvecRows : 8;
    launch(out.device(), "matmul", (rows == 4 ? kMatvec : kMatvec8).kernel(rt), p, vec4_args,
           {uint32_t(ceil_div(plan.n, cols)), uint32_t(ceil_div(plan.m, rows)), uint32_t(plan.batch)}, scalar_fusion);
    return;
  }
  const int64_t tile = tile_edge(plan, out.device().runtime().binding_limit());
  const gpu::Constant trans_a{"TRANS_A", plan.trans_a ? 1.0 : 0.0}, trans_b{"TRANS_B", plan.trans_b ? 1.0 : 0.0},
      t{"T", double(tile / 16)},
      tri{"TRI", triangle_constant(plan.a_triangle)}, tri_c{"TRI_C", triangle_constant(plan.c_triangle)};
  if (std::getenv("FORGE_MATMUL_SCALAR") || !b_aligned(plan)) {
    launch(out.device(), "matmul", kMatmul.kernel(), p, args,
           {uint32_t(ceil_div(plan.n, tile)), uint32_t(ceil_div(plan.m, tile)), uint32_t(plan.batch)},
           {trans_a, trans_b, t, tri, tri_c});
    return;
  }
  const TileKernels& tk = bf16 ? kTilesBf16 : kTilesF32;
  const bool a_vec4 = a_vec4_tiles(plan);
  const gpu::Kernel& tiles = a_vec4 ? tk.vec4_a.kernel() : tk.scalar_a.kernel();
  const Tiles vt = vec4_tiles(plan, tile);
  // The epilogues (tile_fusable): in the tiles' store, or in the split-K
  // reduction's.
  const bool gelu = fuse && fuse->gelu;
  const gpu::Arg residual_arg = residual ? arg(*residual) : arg(filler);
  // The partial sums' passes take the same epilogues.
  const std::array<gpu::Constant, 3> partials_constants{{{"GELU", gelu ? 1.0 : 0.0},
                                                         {"RESIDUAL", residual ? 1.0 : 0.0},
                                                         {"ACCUMULATE", plan.accumulate ? 1.0 : 0.0}}};
  // The kernel's overrides for tiles of `rows` x `cols` over depth k (a
  // split's slices and its short last one each take the slice depth that
  // suits them).
  auto tile_constants_of = [&](int64_t rows, int64_t cols, int64_t k, bool epilogues, int64_t group_rows) {
    const int64_t wgd = tile_threads(rows, cols);
    // 64 invocations stage a slice of 16 in 4 vec4s each, past the kernel's
    // MAX_LOADS of 2: slices of 8.
    const int64_t bk = wgd == 8 ? 8 : slice_depth_bk(rows, cols, k);
    // A_TAIL last: the scalar loader of A has no such constant.
    return std::array<gpu::Constant, 14>{
        trans_a, trans_b, gpu::Constant{"T", double(rows / wgd)}, gpu::Constant{"TN", double(cols / wgd)}, tri,
        tri_c, gpu::Constant{"BK", double(bk)}, gpu::Constant{"K_WHOLE", k % bk == 0 ? 1.0 : 0.0},
        gpu::Constant{"GELU", epilogues && gelu ? 1.0 : 0.0},
        gpu::Constant{"RESIDUAL", epilogues && residual ? 1.0 : 0.0},
        gpu::Constant{"ACCUMULATE", epilogues && plan.accumulate ? 1.0 : 0.0},
        gpu::Constant{"GROUP_ROWS", double(group_rows)}, gpu::Constant{"WGD", double(wgd)},
        gpu::Constant{"A_TAIL", !four(plan.trans_a ? plan.m : k) ? 1.0 : 0.0}};
  };
  auto for_a = [&](const std::array<gpu::Constant, 14>& c) {
    return std::span<const gpu::Constant>(c.data(), a_vec4 ? c.size() : c.size() - 1);
  };
  // The split-K slices and batch items order their tiles alike.
  const int64_t group_rows = tile_group_rows(plan, vt.rows, vt.cols);
  auto tile_constants = [&](int64_t k, bool epilogues) {
    return tile_constants_of(vt.rows, vt.cols, k, epilogues, group_rows);
  };
  if (const TilePieces pieces = tile_pieces(plan, rt.binding_limit()); pieces.pieces > 1) {
    // The whole waves as tiles, the last in pieces, then the fixup of the
    // split tiles.
    const auto constants = tile_constants_of(128, 128, plan.k, true, tile_group_rows(plan, 128, 128));
    MatmulParams pp = p;
    pp.split_from = uint32_t(pieces.split_from);
    pp.pieces = uint32_t(pieces.pieces);
    // [split tiles x pieces][128][128]
    Tensor part = Tensor::empty({pieces.split * pieces.pieces, 128 * 128}, DType::F32, out.device());
    const std::array<gpu::Arg, 6> piece_args{arg(a), arg(b), bias ? arg(*bias) : arg(a), arg(out), residual_arg,
                                             arg(part)};
    launch(out.device(), "matmul", a_vec4 ? tk.pieces_a.kernel() : tk.pieces_sa.kernel(), pp, piece_args,
           grid_1d(uint64_t(pieces.split_from + pieces.split * pieces.pieces), limits), for_a(constants));
    const PartialsParams fp{uint32_t(plan.m), uint32_t(plan.n), uint32_t(pieces.pieces), bias ? 1u : 0u,
                            uint32_t(ldc), uint32_t(plan.c_offset), uint32_t(pieces.split_from), 0};
    launch(out.device(), "matmul", kPiecesFixup.kernel(), fp,
           {arg(part), bias ? arg(*bias) : arg(part), arg(out), residual_arg},
           grid_1d(uint64_t(pieces.split * 8), limits),  // bands of 16 rows
           {{"T", 8.0}, {"TN", 8.0}, partials_constants[0], partials_constants[1], partials_constants[2]});
    return;
  }
  const std::array<uint32_t, 3> tiles_grid{uint32_t(ceil_div(plan.n, vt.cols)), uint32_t(ceil_div(plan.m, vt.rows)), 1};
  const KSlices slicing = k_slices(plan, vt, out.device().runtime().binding_limit());
  if (slicing.splits == 1) {
    const std::array<gpu::Arg, 5> whole_args{arg(a), arg(b), bias ? arg(*bias) : arg(a), arg(out), residual_arg};
    launch(out.device(), "matmul", tiles, p, whole_args, {tiles_grid[0], tiles_grid[1], uint32_t(plan.batch)},
           for_a(tile_constants(plan.k, true)));
    return;
  }
  // Split-K: the slices of k but the last, shorter one (when k is no
  // multiple of kc) are the batch items of one dispatch (A and B advanced by
  // kc each, each slice's [m, n] partial product dense in `part`); the last
  // is a second dispatch over B bound from its start. One pass then sums the
  // slices in order and adds the bias.
  const int64_t kc = slicing.kc, full = slicing.full, tail = slicing.tail;
  const int64_t slices = full + (tail > 0);
  MatmulParams ps = p;
  ps.k = uint32_t(kc);
  ps.a_batch_stride = uint32_t(plan.trans_a ? kc * plan.lda : kc);
  ps.b_batch_stride = uint32_t(plan.trans_b ? kc : kc * plan.ldb);
  ps.has_bias = 0;
  ps.ldc = uint32_t(plan.n);
  ps.c_offset = 0;
  ps.c_batch_stride = uint32_t(plan.m * plan.n);
  Tensor part = Tensor::empty({slices, plan.m, plan.n}, DType::F32, out.device());  // [slices, m, n]
  if (full > 0) {
    const std::array<gpu::Arg, 5> slice_args{arg(a), arg(b), arg(a), arg(part), arg(filler)};
    launch(out.device(), "matmul", tiles, ps, slice_args, {tiles_grid[0], tiles_grid[1], uint32_t(full)},
           for_a(tile_constants(kc, false)));
  }
  if (tail > 0) {
    MatmulParams pt = ps;
    pt.k = uint32_t(tail);
    pt.a_offset = uint32_t(plan.a_offset + full * ps.a_batch_stride);
    pt.c_offset = uint32_t(full * plan.m * plan.n);
    // A multiple of 256 for f32 (kc: 64s); for bf16 where tiles_read_bf16.
    const uint64_t b_skip = tail_b_offset(plan, slicing, dtype_size(b.dtype()));
    const std::array<gpu::Arg, 5> tail_args{arg(a), arg(b, b_skip, b.nbytes() - b_skip), arg(a), arg(part),
                                            arg(filler)};
    launch(out.device(), "matmul", tiles, pt, tail_args, tiles_grid, for_a(tile_constants(tail, false)));
  }
  PartialsParams r{uint32_t(plan.m), uint32_t(plan.n), uint32_t(slices), bias ? 1u : 0u, uint32_t(ldc),
                 uint32_t(plan.c_offset), 0, 0};
  const std::array<gpu::Arg, 4> reduce_args{arg(part), bias ? arg(*bias) : arg(part), arg(out), residual_arg};
  launch(out.device(), "matmul", kSplitKReduce.kernel(), r, reduce_args,
         elementwise_grid(uint64_t(plan.m * plan.n), limits), partials_constants);
}

}  // namespace forge::webgpu
