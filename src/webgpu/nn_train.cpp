// Host side of dropout and adamw (shaders/dropout.wgsl, adamw.wgsl):
// elementwise, split as rows of one element.
#include "forge_shaders.h"
#include "webgpu/launch.h"
#include "webgpu/nn_kernels.h"
#include "webgpu/composed_kernel.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kDropout{"dropout", {shaders::philox, shaders::dropout}};
const ComposedKernel kAdamW{"adamw", {shaders::adamw_update, shaders::adamw}};
const ComposedKernel kAdamWFlat{"adamw_flat", {shaders::adamw_update, shaders::adamw_flat}};

struct DropoutParams {
  uint32_t count;
  uint32_t base_lo, base_hi;  // flat index of the dispatch's first element
  uint32_t threshold;
  uint32_t k0, k1;            // the seed's low and high words
  float scale;
  uint32_t pad;
};
static_assert(sizeof(DropoutParams) == 32);

struct AdamWParams {
  uint32_t count;
  float decay, beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, sqrt_bias_c2, eps;
  uint32_t pad[3];
};
static_assert(sizeof(AdamWParams) == 48);

struct AdamWFlatParams {
  uint32_t count, base, nseg, clip;
  float max_norm, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, sqrt_bias_c2, eps;
  uint32_t pad[3];
};
static_assert(sizeof(AdamWFlatParams) == 64);

}  // namespace

void dropout(const Tensor& x, const DropoutPlan& plan, Tensor& y) {
  const Device& dev = y.device();
  for_each_row_chunk(dev.runtime(), "dropout", x.numel(), 4, [&](int64_t first, int64_t count) {
    DropoutParams p{uint32_t(count), uint32_t(uint64_t(first)), uint32_t(uint64_t(first) >> 32), plan.threshold,
                    uint32_t(plan.seed), uint32_t(plan.seed >> 32), plan.scale, 0};
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, "dropout", kDropout.kernel(), p, {arg(x, off, bytes), arg(y, off, bytes)},
           grid_1d((uint64_t(count) + 255) / 256, dev.runtime().limits()));
  });
}

void adamw(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamWPlan& a) {
  const Device& dev = param.device();
  for_each_row_chunk(dev.runtime(), "adamw", param.numel(), 4, [&](int64_t first, int64_t count) {
    AdamWParams p{uint32_t(count), a.decay,     a.beta1,        a.one_minus_beta1, a.beta2, a.one_minus_beta2,
                  a.step_size,     a.sqrt_bias_c2, a.eps,       {}};
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, "adamw", kAdamW.kernel(), p,
           {arg(param, off, bytes), arg(grad, off, bytes), arg(m, off, bytes), arg(v, off, bytes)},
           grid_1d((uint64_t(count) + 255) / 256, dev.runtime().limits()));
  });
}

void adamw_flat(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const Tensor& segments,
                const AdamWPlan& a, const Tensor& norm_sq, float max_norm) {
  const Device& dev = param.device();
  const bool clip = norm_sq.defined() && max_norm > 0;
  // One dispatch per binding-limit chunk; segments index the whole buffer.
  for_each_row_chunk(dev.runtime(), "adamw_flat", param.numel(), 4, [&](int64_t first, int64_t count) {
    AdamWFlatParams p{uint32_t(count), uint32_t(first), uint32_t(segments.dim(0)), clip ? 1u : 0u,
                      clip ? max_norm : 0.0f, a.decay, a.beta1, a.one_minus_beta1, a.beta2, a.one_minus_beta2,
                      a.step_size, a.sqrt_bias_c2, a.eps, {}};
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, "adamw_flat", kAdamWFlat.kernel(), p,
           {arg(param, off, bytes), arg(grad, off, bytes), arg(m, off, bytes), arg(v, off, bytes), arg(segments),
            arg(clip ? norm_sq : segments)},  // unread without clipping
           grid_1d((uint64_t(count) + 255) / 256, dev.runtime().limits()));
  });
}

}  // namespace forge::webgpu
