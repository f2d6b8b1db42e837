// Host side of the tiled matmul (shaders/matmul.wgsl).
#include "forge_shaders.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kMatmul{"matmul", shaders::matmul};

struct MatmulParams {
  uint32_t m, n, k, lda, ldb, a_batch_stride, b_batch_stride;
  float alpha;
  uint32_t has_bias;
  uint32_t ldc;       // row stride of C
  uint32_t c_offset;  // elements of C before the first output
  uint32_t a_offset;  // elements of A before its first element
};
static_assert(sizeof(MatmulParams) == 48);

constexpr uint32_t kTile = 64;

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out) {
  if (plan.m == 0 || plan.n == 0) return;
  const int64_t ldc = plan.ldc ? plan.ldc : plan.n;
  if (plan.k == 0 && ldc == plan.n && plan.c_offset == 0) {
    // The kernel would write alpha * 0 (+ bias); the empty sum is clearer spelled out.
    out.device().runtime().clear(out.buffer(), out.byte_offset(), (out.nbytes() + 3) / 4 * 4);
  }
  const auto& limits = out.device().runtime().limits();
  if (plan.batch > limits.max_workgroups_per_dim)
    throw DeviceError("[matmul] batch " + std::to_string(plan.batch) + " exceeds the device's grid limit");
  MatmulParams p{uint32_t(plan.m), uint32_t(plan.n), uint32_t(plan.k), uint32_t(plan.lda), uint32_t(plan.ldb),
                 uint32_t(plan.a_batch_stride), uint32_t(plan.b_batch_stride), plan.alpha,
                 bias ? 1u : 0u, uint32_t(ldc), uint32_t(plan.c_offset), uint32_t(plan.a_offset)};
  std::array<uint32_t, 3> groups{uint32_t((plan.n + kTile - 1) / kTile), uint32_t((plan.m + kTile - 1) / kTile),
                                 uint32_t(plan.batch)};
  launch(out.device(), "matmul", kMatmul, p, {arg(a), arg(b), bias ? arg(*bias) : arg(a), arg(out)}, groups,
         {{"TRANS_A", plan.trans_a ? 1.0 : 0.0}, {"TRANS_B", plan.trans_b ? 1.0 : 0.0}});
}

}  // namespace forge::webgpu
