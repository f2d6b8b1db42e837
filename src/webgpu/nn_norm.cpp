// Host side of layernorm and layernorm_bwd (shaders/layernorm.wgsl,
// layernorm_bwd.wgsl): a workgroup or a subgroup to a row (row_launch),
// rows split under the binding limit.
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/nn_kernels.h"

namespace forge::webgpu {

namespace {

const ReducingKernel kLayerNorm{"layernorm", {shaders::row_norm, shaders::layernorm}, shaders::row_reduce,
                                shaders::row_subgroup};
const ReducingKernel kLayerNormBwd{"layernorm_bwd", {shaders::row_norm, shaders::layernorm_bwd}, shaders::row_reduce,
                                   shaders::row_subgroup};

// Mirrors `struct Params` of shaders/row_norm.wgsl.
struct LayerNormParams {
  uint32_t rows, cols;
  float eps;
  uint32_t pad;
};
static_assert(sizeof(LayerNormParams) == 16);

struct RowParams {
  uint32_t rows, cols;
  uint32_t pad[2];
};
static_assert(sizeof(RowParams) == 16);

}  // namespace

void layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, int64_t rows, int64_t cols,
               Tensor& y) {
  const Device& dev = y.device();
  uint64_t row_bytes = uint64_t(cols) * 4;
  for_each_row_chunk(dev.runtime(), "layernorm", rows, row_bytes, [&](int64_t first, int64_t count) {
    LayerNormParams p{uint32_t(count), uint32_t(cols), eps, 0};
    uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    const RowLaunch rl = row_launch(kLayerNorm, dev.runtime(), count, cols);
    launch(dev, "layernorm", *rl.kernel, p, {arg(x, off, bytes), arg(gamma), arg(beta), arg(y, off, bytes)},
           rl.groups, {rl.workgroup});
  });
}

void layernorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& dy, float eps, int64_t rows, int64_t cols,
                   const Tensor* dx_add, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  const Device& dev = dx.device();
  uint64_t row_bytes = uint64_t(cols) * 4;
  Tensor dy_xhat = Tensor::empty({rows, cols}, DType::F32, dev);  // [rows, cols]
  for_each_row_chunk(dev.runtime(), "layernorm_bwd", rows, row_bytes, [&](int64_t first, int64_t count) {
    LayerNormParams p{uint32_t(count), uint32_t(cols), eps, 0};
    uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    // Without dx_add, dy stands in for its binding (unread).
    const RowLaunch rl = row_launch(kLayerNormBwd, dev.runtime(), count, cols);
    launch(dev, "layernorm_bwd", *rl.kernel, p,
           {arg(x, off, bytes), arg(gamma), arg(dy, off, bytes), arg(dx, off, bytes), arg(dy_xhat, off, bytes),
            arg(dx_add ? *dx_add : dy, off, bytes)},
           rl.groups, {rl.workgroup, gpu::Constant{"ADD", dx_add ? 1.0 : 0.0}});
  });
  sum_rows_pair(dy_xhat, dy, rows, cols, dgamma, dbeta);
}

}  // namespace forge::webgpu
