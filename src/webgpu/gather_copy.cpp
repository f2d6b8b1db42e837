// Host side of the strided copy (shaders/strided_copy.wgsl): the attention
// head reshapes and the KV append.
#include "forge_shaders.h"
#include "webgpu/gather_kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kStridedCopy{"strided_copy", shaders::strided_copy};

struct StridedCopyParams {
  uint32_t count, d1, d2, d3;
  uint32_t src_s0, src_s1, src_s2, src_offset;
  uint32_t dst_s0, dst_s1, dst_s2, dst_offset;
};
static_assert(sizeof(StridedCopyParams) == 48);

}  // namespace

void strided_copy(const char* op, const Tensor& src, const CopyPlan& p, Tensor& dst) {
  const uint64_t count = uint64_t(p.count());
  if (count == 0) return;
  const Device& dev = dst.device();
  StridedCopyParams q{uint32_t(count),         uint32_t(p.dims[1]),       uint32_t(p.dims[2]),
                      uint32_t(p.dims[3]),     uint32_t(p.src_stride[0]), uint32_t(p.src_stride[1]),
                      uint32_t(p.src_stride[2]), uint32_t(p.src_offset),  uint32_t(p.dst_stride[0]),
                      uint32_t(p.dst_stride[1]), uint32_t(p.dst_stride[2]), uint32_t(p.dst_offset)};
  launch(dev, op, kStridedCopy, q, {arg(src), arg(dst)}, grid_1d((count + 255) / 256, dev.runtime().limits()));
}

}  // namespace forge::webgpu
