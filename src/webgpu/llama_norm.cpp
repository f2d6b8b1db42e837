// Host side of rope, rms_norm (plain and residual) and rms_norm_bwd
// (shaders/rope.wgsl, rms_norm.wgsl, rms_norm_residual.wgsl, rms_norm_bwd.wgsl):
// token rows split under the binding limit (rope binds its [seq, head_dim / 2]
// cos/sin table whole).
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/llama_kernels.h"
#include "webgpu/nn_kernels.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kRope{"rope", shaders::rope};
// A workgroup or a subgroup to a row (row_launch).
const ReducingKernel kRmsNorm{"rms_norm", {shaders::row_norm, shaders::rms_norm}, shaders::row_reduce,
                              shaders::row_subgroup};
const ReducingKernel kRmsNormResidual{"rms_norm_residual", {shaders::row_norm, shaders::rms_norm_residual},
                                      shaders::row_reduce, shaders::row_subgroup};
const ReducingKernel kRmsNormBwd{"rms_norm_bwd", {shaders::row_norm, shaders::rms_norm_bwd}, shaders::row_reduce,
                                 shaders::row_subgroup};

struct RopeParams {
  uint32_t pairs, first_token, seq, hidden, head_dim, inverse;
  uint32_t pad[2];
};
static_assert(sizeof(RopeParams) == 32);

// Mirrors `struct Params` of shaders/row_norm.wgsl.
struct RowParams {
  uint32_t rows, cols;
  float eps;
  uint32_t pad;
};
static_assert(sizeof(RowParams) == 16);

}  // namespace

void rope(Tensor& x, const Tensor& table, const RopePlan& plan) {
  const Device& dev = x.device();
  uint64_t row_bytes = uint64_t(plan.hidden) * 4;
  const char* op = plan.inverse ? "rope_backward" : "rope";
  for_each_row_chunk(dev.runtime(), op, plan.tokens, row_bytes, [&](int64_t first, int64_t count) {
    uint64_t pairs = uint64_t(count) * uint64_t(plan.hidden) / 2;
    RopeParams p{uint32_t(pairs),         uint32_t(first),         uint32_t(plan.seq),
                 uint32_t(plan.hidden),   uint32_t(plan.head_dim), plan.inverse ? 1u : 0u,
                 {}};
    launch(dev, op, kRope, p, {arg(x, uint64_t(first) * row_bytes, uint64_t(count) * row_bytes), arg(table)},
           grid_1d((pairs + 255) / 256, dev.runtime().limits()));
  });
}

void rms_norm(const Tensor& x, const Tensor* residual, const Tensor& weight, const RowsPlan& plan, Tensor& y,
              Tensor* sum) {
  const Device& dev = y.device();
  uint64_t row_bytes = uint64_t(plan.cols) * 4;
  const char* op = residual ? "rms_norm_residual" : "rms_norm";
  for_each_row_chunk(dev.runtime(), op, plan.rows, row_bytes, [&](int64_t first, int64_t count) {
    RowParams p{uint32_t(count), uint32_t(plan.cols), plan.eps, 0};
    uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    const RowLaunch rl = row_launch(residual ? kRmsNormResidual : kRmsNorm, dev.runtime(), count, plan.cols);
    if (residual)
      launch(dev, op, *rl.kernel, p,
             {arg(x, off, bytes), arg(weight), arg(y, off, bytes), arg(*residual, off, bytes), arg(*sum, off, bytes)},
             rl.groups, {rl.workgroup});
    else
      launch(dev, op, *rl.kernel, p, {arg(x, off, bytes), arg(weight), arg(y, off, bytes)}, rl.groups,
             {rl.workgroup});
  });
}

void rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, const RowsPlan& plan,
                  const Tensor* dx_add, Tensor& dx, Tensor& dweight) {
  const Device& dev = dx.device();
  uint64_t row_bytes = uint64_t(plan.cols) * 4;
  Tensor dy_xhat = Tensor::empty({plan.rows, plan.cols}, DType::F32, dev);  // [rows, cols]
  for_each_row_chunk(dev.runtime(), "rms_norm_bwd", plan.rows, row_bytes, [&](int64_t first, int64_t count) {
    RowParams p{uint32_t(count), uint32_t(plan.cols), plan.eps, 0};
    uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    // Without dx_add, dy stands in for its binding (unread).
    const RowLaunch rl = row_launch(kRmsNormBwd, dev.runtime(), count, plan.cols);
    launch(dev, "rms_norm_bwd", *rl.kernel, p,
           {arg(x, off, bytes), arg(weight), arg(dy, off, bytes), arg(dx, off, bytes), arg(dy_xhat, off, bytes),
            arg(dx_add ? *dx_add : dy, off, bytes)},
           rl.groups, {rl.workgroup, gpu::Constant{"ADD", dx_add ? 1.0 : 0.0}});
  });
  sum_rows(dy_xhat, plan.rows, plan.cols, dweight);
}

}  // namespace forge::webgpu
