// Host side of flash attention (shaders/flash_*.wgsl): the parameter block,
// the choice between the tiled prefill kernel, the one-query-per-invocation
// prefill kernel (where the tiled one does not fit) and the split-K decode
// kernel (a CPU driver's: an invocation a row, flash_decode_serial), and the
// backward passes: stats, then either the scores' gradients in tiles
// followed by three products (see grads_by_products), or grad_k /
// grad_v through the register-tiled kernel where it fits (summed over the
// query heads of a GQA group in a second pass), else the
// one-key-per-invocation kernel, with grad_q one query per invocation.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <optional>

#include "forge/error.h"
#include "forge_shaders.h"
#include "ops/matmul_plan.h"
#include "webgpu/attention_kernels.h"
#include "webgpu/flash_tiling.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"
#include "webgpu/composed_kernel.h"

namespace forge::webgpu {

namespace {

// Every flash kernel opens with the parameter block; those that score keys
// add the Philox stream and the visibility/mask/dropout helpers.
const ComposedKernel kForward{"flash_fwd", {shaders::flash_params, shaders::philox, shaders::flash_common,
                                            shaders::flash_rows, shaders::flash_fwd}};
const ComposedKernel kForwardTiled{"flash_fwd_tiled", {shaders::flash_params, shaders::philox,
                                                        shaders::flash_common, shaders::flash_fwd_tiled}};
const ReducingKernel kDecode{"flash_decode", {shaders::flash_params, shaders::philox, shaders::flash_common,
                                              shaders::flash_decode_k, shaders::flash_decode}};
// The same reading keys as vec4s (head sizes a multiple of 4).
const ReducingKernel kDecode4{"flash_decode4", {shaders::flash_params, shaders::philox, shaders::flash_common,
                                                shaders::flash_decode_k4, shaders::flash_decode}};
const ComposedKernel kDecodeSerial{"flash_decode_serial", {shaders::flash_params, shaders::philox,
                                                           shaders::flash_common, shaders::flash_decode_serial}};
constexpr uint64_t kSerialRows = 64;  // flash_decode_serial's ROWS
const ComposedKernel kCombine{"flash_combine", {shaders::flash_params, shaders::flash_combine}};
const ReducingKernel kBwdStats{"flash_bwd_stats", {shaders::flash_params, shaders::flash_bwd_stats}};
const ComposedKernel kBwdDq{"flash_bwd_dq", {shaders::flash_params, shaders::philox, shaders::flash_common,
                                             shaders::flash_rows, shaders::flash_bwd_dq}};
const ComposedKernel kBwdDkv{"flash_bwd_dkv", {shaders::flash_params, shaders::philox, shaders::flash_common,
                                               shaders::flash_bwd_dkv}};
const ComposedKernel kBwdDkvTiled{"flash_bwd_dkv_tiled", {shaders::flash_params, shaders::philox,
                                                           shaders::flash_common, shaders::flash_bwd_dkv_tiled}};
const ComposedKernel kBwdScores{"flash_bwd_scores", {shaders::flash_params, shaders::philox, shaders::flash_common,
                                                     shaders::flash_bwd_scores}};
const ComposedKernel kBwdSum{"flash_bwd_sum", {shaders::flash_params, shaders::flash_bwd_sum}};

// Mirrors `struct Params` of shaders/flash_params.wgsl.
struct FlashParams {
  uint32_t batch, seq_q, seq_k, heads;
  uint32_t kv_heads, head_dim, kv_offset, window;
  uint32_t causal, has_mask, mask_sb, mask_sh;
  uint32_t mask_si, mask_sj, dropout, threshold;
  uint32_t k0, k1;
  float scale, drop_scale;
  uint32_t tile, splits, split_len;
  float neg_inf;
  uint32_t q_row, kv_row, p_row, pad1;
};
static_assert(sizeof(FlashParams) == 112);

constexpr uint32_t kBlock = 64;           // queries (or keys) per workgroup
constexpr uint32_t kStatsRows = 16;       // rows per workgroup of flash_bwd_stats (its ROWS)
constexpr uint32_t kTileFloats = 2048;    // TILE_FLOATS of flash_rows.wgsl
constexpr uint32_t kDkvTileFloats = 1984; // TILE_FLOATS of flash_bwd_dkv
constexpr int64_t kDecodeMaxQueries = 8;  // up to this many queries use the split-K kernel
// Up to this many keys a decode row takes one split (no combine dispatch):
// 512 keys of head_dim 64 are 128 KiB of K and V per row, which one
// workgroup streams in about the time a second dispatch costs on the H200.
constexpr uint64_t kDirectKeys = 512;

uint32_t u32(int64_t x) { return uint32_t(x); }
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

FlashParams params(const AttentionPlan& p) {
  FlashParams f{};
  f.batch = u32(p.batch), f.seq_q = u32(p.seq_q), f.seq_k = u32(p.seq_k), f.heads = u32(p.heads);
  f.kv_heads = u32(p.kv_heads), f.head_dim = u32(p.head_dim), f.kv_offset = u32(p.kv_offset);
  f.window = u32(p.window), f.causal = p.causal ? 1 : 0, f.has_mask = p.has_mask ? 1 : 0;
  f.mask_sb = u32(p.mask_sb), f.mask_sh = u32(p.mask_sh), f.mask_si = u32(p.mask_si), f.mask_sj = u32(p.mask_sj);
  f.dropout = p.dropout ? 1 : 0, f.threshold = p.threshold;
  f.k0 = uint32_t(p.seed), f.k1 = uint32_t(p.seed >> 32);
  f.scale = p.scale, f.drop_scale = p.drop_scale;
  f.tile = std::min<uint32_t>(128, kTileFloats / u32(p.head_dim));
  f.splits = 1, f.split_len = 64;
  f.neg_inf = -INFINITY;
  f.q_row = u32(p.q_stride()), f.kv_row = u32(p.kv_stride());
  return f;
}

// The kernels bind whole tensors and index with u32: both must fit.
bool fits(const Device& dev, uint64_t bytes) {
  return bytes <= dev.runtime().binding_limit() && bytes / 4 < (uint64_t(1) << 32);
}

void check_fits(const char* op, const Device& dev, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (!fits(dev, uint64_t(t->nbytes())))
      throw DeviceError(std::string("[") + op + "] " + t->describe() +
                        " exceeds the device's storage binding limit of " +
                        std::to_string(dev.runtime().binding_limit()) + " bytes");
  }
}

// The most invocations a one-dimensional workgroup may have on this device.
uint32_t workgroup_invocations(const gpu::Runtime& rt) {
  const gpu::Limits& lim = rt.limits();
  return std::min(lim.max_workgroup_invocations, lim.max_workgroup_size_x);
}

// The tiled prefill kernel's tiles on this device, if it fits.
std::optional<FlashTiling> prefill_tiling(int64_t head_dim, const gpu::Runtime& rt) {
  return flash_tiling(head_dim, rt.workgroup_storage(), workgroup_invocations(rt));
}

// Whether the tiled prefill kernel loads each next K and V tile into
// registers during the current one (PREFETCH of flash_fwd_tiled.wgsl): where
// V has a space of its own and a tile is at most two vec4s of each an
// invocation. FORGE_FLASH_PREFETCH=0|1 decides instead (measurement, tests).
bool prefill_prefetch(const FlashTiling& t, int64_t head_dim) {
  const char* e = std::getenv("FORGE_FLASH_PREFETCH");
  const bool want = e ? std::string(e) != "0" : true;
  return want && t.v_off != t.k_off && uint64_t(t.bk) * uint64_t(head_dim / 4) <= 2ull * t.bq * 4;
}

// The tiled grad_k / grad_v kernel's tiles on this device, if it fits.
std::optional<FlashBwdTiling> backward_tiling(int64_t head_dim, const gpu::Runtime& rt) {
  return flash_bwd_tiling(head_dim, rt.workgroup_storage(), workgroup_invocations(rt));
}

// grad_k and grad_v through flash_bwd_dkv_tiled. With a GQA group, each query
// head gets its own workgroups and writes a partial [B, Sk, H, D] that
// flash_bwd_sum adds up, when the partials fit a binding; else one
// workgroup loops over the group.
void backward_dkv_tiled(const Device& dev, const char* op, const FlashParams& f, const FlashBwdTiling& t,
                        const AttentionPlan& plan, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m,
                        const Tensor& grad_out, const Tensor& stats, Tensor& grad_k, Tensor& grad_v) {
  const gpu::Limits& lim = dev.runtime().limits();
  const uint64_t part_bytes = uint64_t(plan.batch * plan.seq_k * plan.heads * plan.head_dim) * 4;
  const bool split = plan.heads > plan.kv_heads && fits(dev, part_bytes);
  const uint64_t ktiles = ceil_div(uint64_t(plan.seq_k), t.bk);
  const uint64_t groups = uint64_t(plan.batch * (split ? plan.heads : plan.kv_heads)) * ktiles;
  const double dim = double(plan.head_dim);
  auto dkv = [&](Tensor& out_k, Tensor& out_v) {
    const gpu::Constant constants[] = {{"HEAD_DIM", dim},          {"BK", double(t.bk)},
                                       {"BQ", double(t.bq)},        {"STRIDE", double(t.stride)},
                                       {"SM_VEC4", double(t.vec4s)}, {"SPLIT_HEADS", split ? 1.0 : 0.0}};
    const gpu::Arg args[] = {arg(q), arg(k), arg(v), arg(m), arg(grad_out), arg(stats), arg(out_k), arg(out_v)};
    launch(dev, op, kBwdDkvTiled.kernel(), f, args, grid_1d(groups, lim), constants);
  };
  if (!split) {
    dkv(grad_k, grad_v);
    return;
  }
  const Shape part_shape{plan.batch, plan.seq_k, plan.heads, plan.head_dim};
  Tensor part_k = Tensor::empty(part_shape, DType::F32, dev), part_v = Tensor::empty(part_shape, DType::F32, dev);
  dkv(part_k, part_v);
  const uint64_t vec4s = uint64_t(grad_k.numel()) / 4;
  launch(dev, op, kBwdSum.kernel(), f, {arg(part_k), arg(part_v), arg(grad_k), arg(grad_v)},
         grid_1d(ceil_div(vec4s, 64), lim), {{"HEAD_DIM", dim}});
}

// The scores kernel's tiles where the backward takes its gradients as
// products, none where it does not: flash_bwd_scores writes P z and dS
// [B * H, Sq, Sk] (rows padded to scores_row) tile by tile, and the tiled
// matmul takes grad_q = scale dS K, grad_k = scale dS^T Q and grad_v =
// (P z)^T dO per query head. The scores and their gradient are computed
// once, in tiles that fill the device, and the three products run at the
// matmul's rate. On the H200, ms
// a layer at GPT-2's 1024-token prefill / SmolLM2-360M's / its B4 x T512
// training: 0.693 / 0.790 / 0.807 through flash_bwd_dkv_tiled (which wrote
// dS for grad_q's product), 0.454 / 0.475 / 0.440 so; SmolLM2-360M's
// fine-tuning step 177.2 -> 167.0 ms. It needs P and dS within
// kScoresMaxBytes and one binding each, scores that are whole or a lower
// triangle (no window; a causal mask from key 0 with Sq = Sk: the scores
// kernel leaves the tiles no query sees unwritten, and the products read
// the triangle only), and tiles that fit the workgroup storage.
constexpr uint64_t kScoresMaxBytes = uint64_t(512) << 20;

// Elements between rows of P z and dS: Sk made a whole number of vec4s
// (the scores kernel stores vec4s; the products read k < Sk).
int64_t scores_row(const AttentionPlan& p) { return (p.seq_k + 3) / 4 * 4; }

std::optional<FlashScoresTiling> grads_by_products(const Device& dev, const AttentionPlan& p) {
  if (p.window != 0 || (p.causal && (p.kv_offset != 0 || p.seq_q != p.seq_k))) return std::nullopt;
  const uint64_t bh = uint64_t(p.batch * p.heads), d = uint64_t(p.head_dim);
  const uint64_t scores = bh * uint64_t(p.seq_q) * uint64_t(scores_row(p)) * 4;
  if (scores > kScoresMaxBytes || !fits(dev, scores) || !fits(dev, bh * uint64_t(p.seq_k) * d * 4) ||
      !fits(dev, bh * uint64_t(p.seq_q) * d * 4))
    return std::nullopt;
  const gpu::Runtime& rt = dev.runtime();
  return flash_scores_tiling(p.head_dim, rt.workgroup_storage(), workgroup_invocations(rt));
}

// The backward from P z and dS [B * H, Sq, Sk] (flash_bwd_scores; rows
// padded to scores_row): per query head, grad_q [Sq, D] = scale dS K,
// grad_k [Sk, D] = scale dS^T Q and grad_v = (P z)^T dO, over dS's lower
// triangle when causal. The products read K, Q
// and dO token-major, [B, S, heads, D], as batch items (b, head)
// (MatmulPlan::heads; a GQA group's query heads read their KV head), and
// write grad_q token-major; grad_k and grad_v come out head-major per query
// head, [B * H, Sk, D], for flash_bwd_sum to add up each GQA group's heads
// (token-major into grad_k and grad_v where each group is one head).
void backward_by_products(const Device& dev, const char* op, const FlashParams& f, const FlashScoresTiling& t,
                          const AttentionPlan& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m,
                          const Tensor& grad_out, const Tensor& stats, Tensor& grad_q, Tensor& grad_k,
                          Tensor& grad_v) {
  const int64_t B = p.batch, H = p.heads, Hkv = p.kv_heads, Sq = p.seq_q, Sk = p.seq_k, D = p.head_dim;
  const int64_t row = scores_row(p);
  const gpu::Limits& lim = dev.runtime().limits();
  Tensor probs = Tensor::empty({B * H, Sq, row}, DType::F32, dev), ds = Tensor::empty({B * H, Sq, row}, DType::F32, dev);
  const uint64_t tiles = uint64_t(B * H) * ceil_div(uint64_t(Sq), t.t) * ceil_div(uint64_t(Sk), t.t);
  FlashParams fs = f;
  fs.p_row = u32(row);
  launch(dev, op, kBwdScores.kernel(), fs,
         {arg(q), arg(k), arg(v), arg(m), arg(grad_out), arg(stats), arg(probs), arg(ds)}, grid_1d(tiles, lim),
         {{"HEAD_DIM", double(D)}, {"T", double(t.t)}, {"DC4", double(t.dc4)}});

  // q, k, v and their gradients at their token strides (q_row, kv_row);
  // dO dense.
  const int64_t qs = p.q_stride(), kvs = p.kv_stride();
  MatmulPlan mq;  // grad_q per head [Sq, D] = scale dS [Sq, Sk] @ K [Sk, D]
  mq.batch = B * H, mq.m = Sq, mq.n = D, mq.k = Sk, mq.alpha = p.scale;
  mq.a_triangle = p.causal ? Triangle::Lower : Triangle::Full;
  mq.lda = row, mq.a_batch_stride = Sq * row;
  mq.heads = H, mq.b_group = H / Hkv, mq.ldb = kvs, mq.b_batch_stride = Sk * kvs, mq.b_head_stride = D;
  mq.ldc = qs, mq.c_batch_stride = Sq * qs, mq.c_head_stride = D;
  matmul(ds, k, nullptr, mq, grad_q);

  MatmulPlan mk;  // grad_k per head [Sk, D] = scale dS^T [Sk, Sq] @ Q [Sq, D]; grad_v likewise from P z and dO
  mk.batch = B * H, mk.m = Sk, mk.n = D, mk.k = Sq, mk.trans_a = true, mk.alpha = p.scale;
  mk.a_triangle = p.causal ? Triangle::Upper : Triangle::Full;
  mk.lda = row, mk.a_batch_stride = Sq * row;
  mk.heads = H, mk.ldb = qs, mk.b_batch_stride = Sq * qs, mk.b_head_stride = D;
  MatmulPlan mv = mk;  // dO [Sq, D] per head, dense
  mv.alpha = 1.0f, mv.ldb = H * D, mv.b_batch_stride = Sq * H * D;
  if (H == Hkv) {
    // A head a group (GPT-2): nothing to add up, each head's gradients go
    // token-major into grad_k and grad_v.
    mk.ldc = kvs, mk.c_batch_stride = Sk * kvs, mk.c_head_stride = D;
    mv.ldc = kvs, mv.c_batch_stride = Sk * kvs, mv.c_head_stride = D;
    matmul(ds, q, nullptr, mk, grad_k);
    matmul(probs, grad_out, nullptr, mv, grad_v);
    return;
  }
  Tensor dkh = Tensor::empty({B * H, Sk, D}, DType::F32, dev), dvh = Tensor::empty({B * H, Sk, D}, DType::F32, dev);
  matmul(ds, q, nullptr, mk, dkh);
  matmul(probs, grad_out, nullptr, mv, dvh);
  const uint64_t vec4s = uint64_t(grad_k.numel()) / 4;
  launch(dev, op, kBwdSum.kernel(), f, {arg(dkh), arg(dvh), arg(grad_k), arg(grad_v)}, grid_1d(ceil_div(vec4s, 64), lim),
         {{"HEAD_DIM", double(D)}, {"HEAD_MAJOR", 1.0}});
}

}  // namespace

bool attention_forward_strided(const AttentionPlan& plan, const Device& dev) {
  return plan.seq_q > kDecodeMaxQueries && prefill_tiling(plan.head_dim, dev.runtime()).has_value();
}

bool attention_backward_strided(const AttentionPlan& plan, const Device& dev) {
  return plan.heads == plan.kv_heads && grads_by_products(dev, plan).has_value();
}

std::string attention_backward_kernel(const AttentionPlan& plan, const Device& dev) {
  if (const std::optional<FlashScoresTiling> s = grads_by_products(dev, plan))
    return "flash_bwd_scores " + std::to_string(s->t) + "x" + std::to_string(s->t) + " + products";
  auto t = backward_tiling(plan.head_dim, dev.runtime());
  return t ? "flash_bwd_dkv_tiled " + std::to_string(t->bk) + "x" + std::to_string(t->bq) : "flash_bwd_dkv";
}

std::string attention_forward_kernel(int64_t seq_q, int64_t head_dim, const gpu::Runtime& rt) {
  if (seq_q <= kDecodeMaxQueries) return rt.cpu_driver() ? "flash_decode_serial" : "flash_decode";
  auto t = prefill_tiling(head_dim, rt);
  return t ? "flash_fwd_tiled " + std::to_string(t->bq) + "x" + std::to_string(t->bk) : "flash_fwd";
}

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                       const AttentionPlan& plan, Tensor& out, Tensor& lse) {
  const char* op = "flash_attention_v2";
  const Device& dev = out.device();
  const gpu::Limits& lim = dev.runtime().limits();
  const Tensor& m = mask ? *mask : q;  // an unused binding when there is no mask
  check_fits(op, dev, {&q, &k, &v, &m});
  FlashParams f = params(plan);
  const double dim = double(plan.head_dim);
  if (plan.seq_q > kDecodeMaxQueries) {
    if (auto t = prefill_tiling(plan.head_dim, dev.runtime())) {
      uint64_t groups = uint64_t(plan.batch * plan.heads) * ceil_div(uint64_t(plan.seq_q), t->bq);
      launch(dev, op, kForwardTiled.kernel(), f, {arg(q), arg(k), arg(v), arg(m), arg(out), arg(lse)},
             grid_1d(groups, lim),
             {{"HEAD_DIM", dim}, {"BQ", double(t->bq)}, {"BK", double(t->bk)},
              {"K_STRIDE", double(t->k_stride)}, {"ROW_STRIDE", double(t->row_stride)},
              {"V_OFF", double(t->v_off)}, {"P_OFF", double(t->p_off)}, {"RED_OFF", double(t->red_off)},
              {"SM_VEC4", double(t->vec4s)}, {"PREFETCH", prefill_prefetch(*t, plan.head_dim) ? 1.0 : 0.0}});
      return;
    }
    uint64_t groups = uint64_t(plan.batch * plan.heads) * ceil_div(uint64_t(plan.seq_q), kBlock);
    launch(dev, op, kForward.kernel(), f, {arg(q), arg(k), arg(v), arg(m), arg(out), arg(lse)}, grid_1d(groups, lim),
           {{"HEAD_DIM", dim}});
    return;
  }
  const uint64_t rows = uint64_t(plan.batch * plan.seq_q * plan.heads);
  if (dev.runtime().cpu_driver()) {
    // A CPU driver (SwiftShader) runs a workgroup's barriers as switches
    // between its invocations: there an invocation scores a row alone.
    launch(dev, op, kDecodeSerial.kernel(), f, {arg(q), arg(k), arg(v), arg(m), arg(out), arg(lse)},
           grid_1d(ceil_div(rows, kSerialRows), lim), {{"HEAD_DIM", dim}});
    return;
  }
  // Decode: split the keys so that the rows x splits workgroups fill the device.
  // Causal queries over a cache see its first kv_offset + seq_q keys at most:
  // the splits cover those, not the whole capacity.
  const uint64_t keys = plan.causal ? std::min<uint64_t>(uint64_t(plan.seq_k), uint64_t(plan.kv_offset + plan.seq_q))
                                    : uint64_t(plan.seq_k);
  // Up to kDirectKeys keys one workgroup per row reads them all and writes
  // the output itself: a combine dispatch costs more than the split saves.
  const uint64_t key_tiles = std::max<uint64_t>(1, ceil_div(keys, 64));
  uint64_t splits = keys <= kDirectKeys ? 1 : std::clamp<uint64_t>(ceil_div(512, rows), 1, std::min<uint64_t>(key_tiles, 64));
  uint64_t split_len = ceil_div(key_tiles, splits) * 64;
  splits = std::max<uint64_t>(1, ceil_div(keys, split_len));
  f.splits = uint32_t(splits), f.split_len = uint32_t(split_len);
  const gpu::Kernel& decode = (plan.head_dim % 4 == 0 ? kDecode4 : kDecode).kernel(dev.runtime());
  if (splits == 1) {
    launch(dev, op, decode, f, {arg(q), arg(k), arg(v), arg(m), arg(out), arg(lse)}, grid_1d(rows, lim),
           {{"HEAD_DIM", dim}});
    return;
  }
  Tensor part = Tensor::empty({int64_t(rows * splits), plan.head_dim + 2}, DType::F32, dev);
  check_fits(op, dev, {&part});
  launch(dev, op, decode, f, {arg(q), arg(k), arg(v), arg(m), arg(part), arg(lse)},
         grid_1d(rows * splits, lim), {{"HEAD_DIM", dim}});
  launch(dev, op, kCombine.kernel(), f, {arg(part), arg(out), arg(lse)}, grid_1d(rows, lim), {{"HEAD_DIM", dim}});
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                        const Tensor& grad_out, const Tensor& lse, const AttentionPlan& plan, Tensor& grad_q,
                        Tensor& grad_k, Tensor& grad_v) {
  const char* op = "flash_attention_v2_backward";
  const Device& dev = grad_q.device();
  const gpu::Limits& lim = dev.runtime().limits();
  const Tensor& m = mask ? *mask : q;
  Tensor stats = Tensor::empty({plan.batch, plan.heads, plan.seq_q, 2}, DType::F32, dev);
  check_fits(op, dev, {&q, &k, &v, &m, &stats});
  FlashParams f = params(plan);
  const double dim = double(plan.head_dim);
  const uint64_t rows = uint64_t(plan.batch * plan.heads * plan.seq_q);
  launch(dev, op, kBwdStats.kernel(dev.runtime()), f, {arg(out), arg(grad_out), arg(lse), arg(stats)},
         grid_1d(ceil_div(rows, kStatsRows), lim), {{"HEAD_DIM", dim}});
  if (const std::optional<FlashScoresTiling> t = grads_by_products(dev, plan)) {
    backward_by_products(dev, op, f, *t, plan, q, k, v, m, grad_out, stats, grad_q, grad_k, grad_v);
    return;
  }
  uint64_t q_groups = uint64_t(plan.batch * plan.heads) * ceil_div(uint64_t(plan.seq_q), kBlock);
  launch(dev, op, kBwdDq.kernel(), f, {arg(q), arg(k), arg(v), arg(m), arg(grad_out), arg(stats), arg(grad_q)},
         grid_1d(q_groups, lim), {{"HEAD_DIM", dim}});
  if (const std::optional<FlashBwdTiling> tiling = backward_tiling(plan.head_dim, dev.runtime())) {
    backward_dkv_tiled(dev, op, f, *tiling, plan, q, k, v, m, grad_out, stats, grad_k, grad_v);
    return;
  }
  f.tile = std::min<uint32_t>(kBlock, kDkvTileFloats / u32(plan.head_dim));
  uint64_t k_groups = uint64_t(plan.batch * plan.kv_heads) * ceil_div(uint64_t(plan.seq_k), kBlock);
  launch(dev, op, kBwdDkv.kernel(), f,
         {arg(q), arg(k), arg(v), arg(m), arg(grad_out), arg(stats), arg(grad_k), arg(grad_v)},
         grid_1d(k_groups, lim), {{"HEAD_DIM", dim}});
}

}  // namespace forge::webgpu
