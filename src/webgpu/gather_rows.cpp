// Host side of the row-wise ops with one id per row: gather_nll, ce_bwd,
// cross_entropy_in_place (shaders/gather_nll.wgsl, ce_bwd.wgsl,
// cross_entropy.wgsl after row_reduce.wgsl) and scatter_add_rows /
// scatter_set_rows (shaders/scatter_add.wgsl). Row blocks keep every binding within the limit.
#include <algorithm>
#include <array>
#include <cstdlib>

#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/gather_kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kGatherNll{"gather_nll", {shaders::nan, shaders::gather_nll}};
const ComposedKernel kCeBwd{"ce_bwd", {shaders::nan, shaders::ce_bwd}};
const ComposedKernel kCrossEntropy{"cross_entropy", {shaders::row_reduce, shaders::nan, shaders::cross_entropy}};
const gpu::Kernel kScatterAdd{"scatter_add", shaders::scatter_add};
const gpu::Kernel kScatterAddGrouped{"scatter_add_grouped", shaders::scatter_add_grouped};

struct GatherNllParams {
  uint32_t rows, cols, row_base;
  uint32_t pad;
};
static_assert(sizeof(GatherNllParams) == 16);

// The Params of ce_bwd.wgsl and of cross_entropy.wgsl alike.
struct CeBwdParams {
  uint32_t rows, cols, row_base;
  float scale;
};
static_assert(sizeof(CeBwdParams) == 16);

// cross_entropy.wgsl's: CeBwdParams' and the row pitch.
struct CrossEntropyParams {
  CeBwdParams rows;
  uint32_t pitch;
  uint32_t pad[3];
};
static_assert(sizeof(CrossEntropyParams) == 32);

struct ScatterAddParams {
  uint32_t rows, cols, id_first, n_ids, groups, r_base;
  uint32_t pad[2];
};
static_assert(sizeof(ScatterAddParams) == 32);

struct ScatterGroupedParams {
  uint32_t u_first, u_count, cols, id_first, ids_at, rows_at;
  uint32_t pad[2];
};
static_assert(sizeof(ScatterGroupedParams) == 32);

// Row owners per column in scatter_add: enough threads to fill a GPU for
// C >= 256 while each thread's scan over the ids stays cheap.
constexpr int64_t kScatterGroups = 64;

}  // namespace

void gather_nll(const Tensor& probs, const Tensor& ids, const RowsPlan& p, Tensor& out) {
  const Device& dev = out.device();
  const uint64_t row_bytes = uint64_t(p.cols) * 4;
  for_each_row_chunk(dev.runtime(), "gather_nll", p.rows, row_bytes, [&](int64_t first, int64_t count) {
    GatherNllParams q{uint32_t(count), uint32_t(p.cols), uint32_t(first), 0};
    launch(dev, "gather_nll", kGatherNll.kernel(), q,
           {arg(probs, uint64_t(first) * row_bytes, uint64_t(count) * row_bytes), arg(ids), arg(out)},
           grid_1d((uint64_t(count) + 255) / 256, dev.runtime().limits()));
  });
}

void ce_bwd(const Tensor& probs, const Tensor& ids, float scale, const RowsPlan& p, Tensor& out) {
  const Device& dev = out.device();
  const uint64_t row_bytes = uint64_t(p.cols) * 4;
  for_each_row_chunk(dev.runtime(), "ce_bwd", p.rows, row_bytes, [&](int64_t first, int64_t count) {
    CeBwdParams q{uint32_t(count), uint32_t(p.cols), uint32_t(first), scale};
    uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    launch(dev, "ce_bwd", kCeBwd.kernel(), q, {arg(probs, off, bytes), arg(ids), arg(out, off, bytes)},
           grid_1d((uint64_t(count) * uint64_t(p.cols) + 255) / 256, dev.runtime().limits()));
  });
}

namespace {

void scatter_rows(const char* op, Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p, bool set) {
  const Device& dev = dst.device();
  const gpu::Runtime& rt = dev.runtime();
  const uint64_t row_bytes = uint64_t(p.cols) * 4;
  if (p.rows == 0 || p.cols == 0) return;
  // dst row blocks x source row blocks, the source blocks in order (the
  // kernel's accumulation order is the row order).
  for_each_row_chunk(rt, op, p.vocab, row_bytes, [&](int64_t first, int64_t count) {
    uint32_t groups = uint32_t(std::min<int64_t>(kScatterGroups, count));
    for_each_row_chunk(rt, op, p.rows, row_bytes, [&](int64_t r0, int64_t n) {
      ScatterAddParams q{uint32_t(count), uint32_t(p.cols), uint32_t(first), uint32_t(n), groups, uint32_t(r0), {}};
      launch(dev, op, kScatterAdd, q,
             {arg(ids), arg(src, uint64_t(r0) * row_bytes, uint64_t(n) * row_bytes),
              arg(dst, uint64_t(first) * row_bytes, uint64_t(count) * row_bytes)},
             grid_1d((uint64_t(p.cols) * groups + 255) / 256, rt.limits()), {{"SET", set ? 1.0 : 0.0}});
    });
  });
}

// The cross-entropy's workgroup: row_workgroup's, or for a vocabulary's long
// rows up to kCeWideWorkgroup invocations (as the device allows), so that
// fewer rows are in flight at once and more of each is still in the L2
// cache when the second pass reads it back (a 50257-wide row is 201 KB).
// On an H100, a block of 1280 GPT-2 rows: 433 us with 256 invocations and
// the second pass forwards, 412 with it backwards, 375 with 1024
// invocations too. FORGE_CE_WORKGROUP=N forces N, to measure: a power of
// two from 32 to 1024 (the workgroup sums are trees), else ignored.
constexpr int64_t kCeWideCols = 16384;
constexpr uint32_t kCeWideWorkgroup = 1024;
gpu::Constant ce_workgroup(int64_t cols, const gpu::Limits& lim) {
  static const char* env = std::getenv("FORGE_CE_WORKGROUP");
  const int64_t forced = env ? std::atoll(env) : 0;
  uint32_t wg = kCeWideWorkgroup;
  if (forced >= 32 && forced <= 1024 && (forced & (forced - 1)) == 0) wg = uint32_t(forced);
  else if (cols < kCeWideCols) return row_workgroup(cols);
  const uint32_t most = std::min(lim.max_workgroup_invocations, lim.max_workgroup_size_x);
  while (wg > 256 && wg > most) wg /= 2;
  return {"WG", double(wg)};
}

}  // namespace

void cross_entropy_in_place(Tensor& logits, const Tensor& ids, float scale, const RowsPlan& p, Tensor& loss) {
  const Device& dev = logits.device();
  const uint64_t row_bytes = uint64_t(p.pitch) * 4;
  const std::array<gpu::Constant, 1> wg{ce_workgroup(p.cols, dev.runtime().limits())};
  for_each_row_chunk(dev.runtime(), "cross_entropy_in_place", p.rows, row_bytes, [&](int64_t first, int64_t count) {
    const CrossEntropyParams q{{uint32_t(count), uint32_t(p.cols), uint32_t(first), scale}, uint32_t(p.pitch), {}};
    const uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    const std::array<gpu::Arg, 3> args{arg(logits, off, bytes), arg(ids), arg(loss)};
    launch(dev, "cross_entropy_in_place", kCrossEntropy.kernel(), q, args, grid_1d(uint64_t(count), dev.runtime().limits()),
           wg);
  });
}

void scatter_add_rows(Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p) {
  scatter_rows("scatter_add_rows", dst, ids, src, p, false);
}

void scatter_add_grouped(Tensor& dst, const RowGroups& g, const Tensor& src, const RowsPlan& p) {
  const Device& dev = dst.device();
  const gpu::Runtime& rt = dev.runtime();
  const uint64_t row_bytes = uint64_t(p.cols) * 4;
  if (g.ids.empty() || p.cols == 0) return;
  const std::vector<uint32_t> packed = g.packed();
  Tensor schedule = Tensor::from_vector(packed, {int64_t(packed.size())}).to(dev);
  const uint32_t groups = uint32_t(g.ids.size());
  // Per dst row block, the groups whose ids fall in it (a run: ids ascend).
  for_each_row_chunk(rt, "scatter_add_rows", p.vocab, row_bytes, [&](int64_t first, int64_t count) {
    const auto lo = std::lower_bound(g.ids.begin(), g.ids.end(), uint32_t(first));
    const auto hi = std::lower_bound(lo, g.ids.end(), uint32_t(first + count));
    if (lo == hi) return;
    ScatterGroupedParams q{uint32_t(lo - g.ids.begin()), uint32_t(hi - lo), uint32_t(p.cols), uint32_t(first),
                           groups + 1, 2 * groups + 1, {}};
    launch(dev, "scatter_add_rows", kScatterAddGrouped, q,
           {arg(schedule), arg(src), arg(dst, uint64_t(first) * row_bytes, uint64_t(count) * row_bytes)},
           grid_1d((uint64_t(q.u_count) * uint64_t(p.cols) + 255) / 256, rt.limits()));
  });
}

void scatter_set_rows(const char* op, Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p) {
  scatter_rows(op, dst, ids, src, p, true);
}

}  // namespace forge::webgpu
