// CPU strided copy: the head reshapes and the KV append.
#include <cstring>

#include "cpu/gather_kernels.h"

namespace forge::cpu {

void strided_copy(const Tensor& src, const CopyPlan& p, Tensor& dst) {
  const float* s = src.data<float>() + p.src_offset;
  float* d = dst.data<float>() + p.dst_offset;
  const size_t run = size_t(p.dims[3]) * sizeof(float);
  if (run == 0) return;
  for (int64_t i0 = 0; i0 < p.dims[0]; ++i0)
    for (int64_t i1 = 0; i1 < p.dims[1]; ++i1)
      for (int64_t i2 = 0; i2 < p.dims[2]; ++i2)
        std::memcpy(d + i0 * p.dst_stride[0] + i1 * p.dst_stride[1] + i2 * p.dst_stride[2],
                    s + i0 * p.src_stride[0] + i1 * p.src_stride[1] + i2 * p.src_stride[2], run);
}

}  // namespace forge::cpu
