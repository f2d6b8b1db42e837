// Host side of sample (shaders/sample.wgsl) and of its repeat penalty
// (shaders/repeat_penalty.wgsl): one workgroup per row, rows split so that the
// logits and the scratch weights stay within the binding limit.
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/sample_kernel.h"

namespace forge::webgpu {

namespace {

// The random draw uses the Philox stream of dropout (shaders/philox.wgsl).
const ComposedKernel kSample{"sample", {shaders::philox, shaders::sample}};

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
  Tensor weights = Tensor::empty({plan.rows, plan.vocab}, DType::F32, dev);
  const uint64_t row_bytes = uint64_t(plan.vocab) * 4;
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
