// Host side of the row softmax (shaders/softmax.wgsl).
#include "forge_shaders.h"
#include "webgpu/kernels.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kSoftmax{"softmax", {shaders::row_reduce, shaders::softmax}};

struct SoftmaxParams {
  uint32_t rows, cols, causal, q_len, key_offset, row_base;
  uint32_t pad[2];
};
static_assert(sizeof(SoftmaxParams) == 32);

}  // namespace

void softmax(const Tensor& x, const SoftmaxPlan& plan, Tensor& out) {
  uint64_t row_bytes = uint64_t(plan.cols) * 4;
  for_each_row_chunk(out.device().runtime(), "softmax", plan.rows, row_bytes, [&](int64_t first, int64_t count) {
    SoftmaxParams p{uint32_t(count), uint32_t(plan.cols), plan.causal ? 1u : 0u, uint32_t(plan.q_len),
                    uint32_t(plan.key_offset), uint32_t(first), {}};
    launch(out.device(), "softmax", kSoftmax.kernel(), p,
           {arg(x, first * row_bytes, count * row_bytes), arg(out, first * row_bytes, count * row_bytes)},
           grid_1d(uint64_t(count), out.device().runtime().limits()), {row_workgroup(plan.cols)});
  });
}

}  // namespace forge::webgpu
