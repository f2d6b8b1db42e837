// Host side of shaders/bf16_widen.wgsl.
#include "forge_shaders.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kWiden{"bf16_widen", shaders::bf16_widen};

// Mirrors `struct Params` of shaders/bf16_widen.wgsl.
struct WidenParams {
  uint32_t n;
  uint32_t pad[3];
};
static_assert(sizeof(WidenParams) == 16);

}  // namespace

void widen_bf16(const Tensor& x, Tensor& out) {
  const gpu::Runtime& rt = out.device().runtime();
  // Runs of values whose f32 output fits one binding and whose starts keep
  // both bindings aligned (a multiple of the alignment in 2-byte values).
  const int64_t n = x.numel(), step = int64_t(rt.limits().storage_offset_alignment);
  const int64_t run = std::max<int64_t>(step, int64_t(rt.binding_limit() / 4) / step * step);
  for (int64_t i0 = 0; i0 < n; i0 += run) {
    const int64_t count = std::min(run, n - i0);
    WidenParams p{uint32_t(count), {}};
    launch(out.device(), "bf16_to_f32", kWiden, p, {arg(x, uint64_t(i0) * 2, uint64_t(count) * 2),
           arg(out, uint64_t(i0) * 4, uint64_t(count) * 4)}, grid_1d((uint64_t(count) + 255) / 256, rt.limits()));
  }
}

}  // namespace forge::webgpu
