// Host side of the row softmax and its gradient (shaders/softmax.wgsl,
// softmax_bwd.wgsl, both preceded by softmax_mask.wgsl): one workgroup per
// row, rows split under the binding limit.
#include <array>
#include <vector>

#include "forge_shaders.h"
#include "webgpu/kernels.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kSoftmax{"softmax", {shaders::row_reduce, shaders::softmax_mask, shaders::softmax}};
const ComposedKernel kSoftmaxBwd{"softmax_bwd", {shaders::row_reduce, shaders::softmax_mask, shaders::softmax_bwd}};

// Mirrors `struct Params` of shaders/softmax_mask.wgsl.
struct SoftmaxParams {
  uint32_t rows, cols, causal, q_len, key_offset, row_base;
  uint32_t pad[2];
};
static_assert(sizeof(SoftmaxParams) == 32);

// One launch of `kernel` per block of rows within the binding limit, over
// the row blocks of `bound` (each [rows, cols]).
void launch_rows(const char* op, const gpu::Kernel& kernel, const SoftmaxPlan& plan,
                 std::initializer_list<const Tensor*> bound) {
  const Device& dev = bound.begin()[0]->device();
  const uint64_t row_bytes = uint64_t(plan.cols) * 4;
  for_each_row_chunk(dev.runtime(), op, plan.rows, row_bytes, [&](int64_t first, int64_t count) {
    SoftmaxParams p{uint32_t(count), uint32_t(plan.cols), plan.causal ? 1u : 0u, uint32_t(plan.q_len),
                    uint32_t(plan.key_offset), uint32_t(first), {}};
    const uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    std::vector<gpu::Arg> args;
    for (const Tensor* t : bound) args.push_back(arg(*t, off, bytes));
    const std::array<gpu::Constant, 1> wg{row_workgroup(plan.cols)};
    launch(dev, op, kernel, p, args, grid_1d(uint64_t(count), dev.runtime().limits()), wg);
  });
}

}  // namespace

void softmax(const Tensor& x, const SoftmaxPlan& plan, Tensor& out) {
  launch_rows("softmax", kSoftmax.kernel(), plan, {&x, &out});
}

void softmax_bwd(const Tensor& y, const Tensor& dy, const SoftmaxPlan& plan, Tensor& dx) {
  launch_rows("softmax_bwd", kSoftmaxBwd.kernel(), plan, {&y, &dy, &dx});
}

}  // namespace forge::webgpu
