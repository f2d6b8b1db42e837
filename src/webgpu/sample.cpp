// Host side of sample (shaders/sample.wgsl) and of its repeat penalty
// (shaders/repeat_penalty.wgsl): one workgroup per row, rows split so that the
// logits and the scratch weights stay within the binding limit. Greedy rows
// over a large vocabulary take shaders/sample_greedy.wgsl instead: chunks of
// the row scanned by workgroups of their own, then reduced; a CPU driver's
// greedy rows its `serial` scan, an invocation a row.
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/sample_kernel.h"

namespace forge::webgpu {

namespace {

// The random draw uses the Philox stream of dropout (shaders/philox.wgsl).
// The tree's sums always (not ReducingKernel's subgroup form): the CPU
// kernel adds in their order, so both backends draw the same ids.
const ComposedKernel kSample{"sample", {shaders::philox, shaders::argmax, shaders::sample, shaders::reduce_tree}};
const ComposedKernel kGreedyPartial{"sample_greedy", {shaders::argmax, shaders::sample_greedy}, "partial"};
const ComposedKernel kGreedyFinish{"sample_greedy", {shaders::argmax, shaders::sample_greedy}, "finish"};
const ComposedKernel kGreedySerial{"sample_greedy", {shaders::argmax, shaders::sample_greedy}, "serial"};
constexpr int64_t kSerialRows = 64;  // rows a workgroup of `serial` scans (one an invocation)
// sample_greedy.wgsl's CHUNK: logits a workgroup of `partial` scans.
constexpr int64_t kGreedyChunk = 2048;

struct GreedyParams {
  uint32_t rows, vocab, chunks, row_base;
};
static_assert(sizeof(GreedyParams) == 16);

struct SampleParams {
  uint32_t rows, vocab, greedy, top_k;
  float inv_temp, top_p;
  uint32_t k0, k1, step, row_base, index_bits;
  float min_p;
};
static_assert(sizeof(SampleParams) == 48);

const gpu::Kernel kRepeatPenalty{"repeat_penalty", shaders::repeat_penalty};

struct PenaltyParams {
  uint32_t rows, vocab, window, row_base;
  float up, down;
  uint32_t pad0, pad1;
};
static_assert(sizeof(PenaltyParams) == 32);

}  // namespace

void sample(const Tensor& logits, const SamplePlan& plan, Tensor& out) {
  const Device& dev = out.device();
  const uint32_t max_groups = dev.runtime().limits().max_workgroups_per_dim;
  const int64_t chunks = (plan.vocab + kGreedyChunk - 1) / kGreedyChunk;
  const uint64_t row_bytes = uint64_t(plan.vocab) * 4;
  if (plan.greedy && dev.runtime().cpu_driver() && plan.rows <= kSerialRows * int64_t(max_groups)) {
    // A CPU driver pays for each barrier round of the workgroup scans (1.9 ms
    // a row of 1,000 logits on SwiftShader): there an invocation scans a row.
    const Tensor unused = Tensor::empty({1, 2}, DType::U32, dev);  // the module's `part` binding
    for_each_row_chunk(dev.runtime(), "sample", plan.rows, row_bytes, [&](int64_t first, int64_t count) {
      GreedyParams p{uint32_t(count), uint32_t(plan.vocab), 1u, uint32_t(first)};
      const uint32_t groups = uint32_t((count + kSerialRows - 1) / kSerialRows);
      launch(dev, "sample", kGreedySerial.kernel(), p,
             {arg(logits, first * row_bytes, count * row_bytes), arg(unused), arg(out)}, {groups, 1u, 1u});
    });
    return;
  }
  if (plan.greedy && chunks > 1 && plan.rows <= int64_t(max_groups) && chunks <= int64_t(max_groups)) {
    for_each_row_chunk(dev.runtime(), "sample", plan.rows, row_bytes, [&](int64_t first, int64_t count) {
      GreedyParams p{uint32_t(count), uint32_t(plan.vocab), uint32_t(chunks), uint32_t(first)};
      const Tensor part = Tensor::empty({count, chunks, 2}, DType::U32, dev);  // (key, index) a chunk
      const gpu::Arg z = arg(logits, first * row_bytes, count * row_bytes);
      launch(dev, "sample", kGreedyPartial.kernel(), p, {z, arg(part), arg(out)}, {uint32_t(chunks), uint32_t(count), 1u});
      launch(dev, "sample", kGreedyFinish.kernel(), p, {z, arg(part), arg(out)}, {uint32_t(count), 1u, 1u});
    });
    return;
  }
  Tensor weights = Tensor::empty({plan.rows, plan.vocab}, DType::F32, dev);
  for_each_row_chunk(dev.runtime(), "sample", plan.rows, row_bytes, [&](int64_t first, int64_t count) {
    SampleParams p{uint32_t(count), uint32_t(plan.vocab), plan.greedy ? 1u : 0u, plan.top_k,
                   plan.inv_temp,   plan.top_p,           plan.k0,           plan.k1,
                   plan.step,       uint32_t(first),      plan.index_bits,   plan.min_p};
    launch(dev, "sample", kSample.kernel(), p,
           {arg(logits, first * row_bytes, count * row_bytes), arg(weights, first * row_bytes, count * row_bytes),
            arg(out)},
           grid_1d(uint64_t(count), dev.runtime().limits()));
  });
}

void repeat_penalty(const Tensor& logits, const Tensor& recent, const PenaltyPlan& plan, Tensor& out) {
  const Device& dev = out.device();
  const uint64_t row_bytes = uint64_t(plan.vocab) * 4;
  for_each_row_chunk(dev.runtime(), "sample", plan.rows, row_bytes, [&](int64_t first, int64_t count) {
    PenaltyParams p{uint32_t(count), uint32_t(plan.vocab), uint32_t(plan.window), uint32_t(first), plan.up, plan.down,
                    0, 0};
    launch(dev, "sample", kRepeatPenalty, p,
           {arg(logits, first * row_bytes, count * row_bytes), arg(recent), arg(out, first * row_bytes, count * row_bytes)},
           grid_1d(uint64_t(count), dev.runtime().limits()));
  });
}

}  // namespace forge::webgpu
