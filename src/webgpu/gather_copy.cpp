// Host side of the strided copy (shaders/strided_copy.wgsl): the attention
// head reshapes and the KV append.
#include <algorithm>
#include <string>

#include "forge/error.h"
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/gather_kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kStridedCopy{"strided_copy", {shaders::strided_copy_f32, shaders::strided_copy}};
const ComposedKernel kStridedCopyVec4{"strided_copy_vec4", {shaders::strided_copy_vec4, shaders::strided_copy}};

struct StridedCopyParams {
  uint32_t count, d1, d2, d3;
  uint32_t src_s0, src_s1, src_s2, src_offset;
  uint32_t dst_s0, dst_s1, dst_s2, dst_offset;
};
static_assert(sizeof(StridedCopyParams) == 48);

// One side (source or destination) of a copy plan.
struct Side {
  const Tensor* t;
  const int64_t* stride;  // [3]
  int64_t offset;         // elements
};

// A box of the index space: starts a[0..3) and extents k[0..3) of d0..d2,
// with all of d3.
struct Box {
  int64_t a[3] = {0, 0, 0};
  int64_t k[3] = {1, 1, 1};
};

class Splitter {
 public:
  Splitter(const char* op, const Tensor& src, const CopyPlan& p, Tensor& dst)
      : op_(op),
        p_(p),
        dst_(dst),
        sides_{Side{&src, p.src_stride, p.src_offset}, Side{&dst, p.dst_stride, p.dst_offset}},
        limit_(dst.device().runtime().binding_limit()) {}

  // Boxes over dim `level` with the dims before it fixed at box.a and the
  // dims after it whole; a single index that does not fit is split over the
  // next dim.
  void run(int level, Box box) {
    const int64_t n = p_.dims[level];
    for (int64_t i = 0; i < n;) {
      box.a[level] = i;
      box.k[level] = 1;
      int64_t k = n - i;
      for (const Side& s : sides_) k = std::min(k, fitting(s, box, level));
      if (k > 0) {
        box.k[level] = k;
        dispatch(box, level);
        i += k;
        continue;
      }
      if (level == 2)
        throw DeviceError(std::string("[") + op_ + "] a run of " + std::to_string(p_.dims[3] * 4) +
                          " bytes cannot be split to fit the device's storage binding limit of " +
                          std::to_string(limit_) + " bytes");
      run(level + 1, box);
      ++i;
    }
  }

 private:
  // The first element of `box` on side `s`.
  int64_t first(const Side& s, const Box& box) const {
    return s.offset + box.a[0] * s.stride[0] + box.a[1] * s.stride[1] + box.a[2] * s.stride[2];
  }

  // The most indices of dim `level`, from box.a[level], whose range on side
  // `s` fits one binding (0 if not even one does). The dims after `level`
  // are taken whole.
  int64_t fitting(const Side& s, const Box& box, int level) const {
    int64_t inner = p_.dims[3];
    for (int l = level + 1; l < 3; ++l) inner += (p_.dims[l] - 1) * s.stride[l];
    const uint64_t need = alignment_slack(*s.t, uint64_t(first(s, box)) * 4) + uint64_t(inner) * 4;
    if (need > limit_) return 0;
    const uint64_t step = uint64_t(s.stride[level]) * 4;
    return step ? int64_t((limit_ - need) / step) + 1 : p_.dims[level];
  }

  // `box` with the dims after `level` taken whole.
  void dispatch(Box box, int level) {
    for (int l = level + 1; l < 3; ++l) box.k[l] = p_.dims[l];
    StridedCopyParams q{};
    uint64_t count = uint64_t(p_.dims[3]);
    for (int l = 0; l < 3; ++l) count *= uint64_t(box.k[l]);
    q.count = uint32_t(count);
    q.d1 = uint32_t(box.k[1]);
    q.d2 = uint32_t(box.k[2]);
    q.d3 = uint32_t(p_.dims[3]);
    // Each side's binding covers the box's range; the offset is the box's
    // first element as an index into that binding.
    gpu::Arg args[2];
    uint32_t offsets[2];
    for (int i = 0; i < 2; ++i) {
      const Side& s = sides_[i];
      const int64_t lo = first(s, box);
      int64_t hi = lo + p_.dims[3];
      for (int l = 0; l < 3; ++l) hi += (box.k[l] - 1) * s.stride[l];
      AlignedRange r = aligned_range(*s.t, uint64_t(lo) * 4, uint64_t(hi) * 4);
      args[i] = r.arg;
      offsets[i] = uint32_t(lo) + r.shift;
    }
    q.src_s0 = uint32_t(p_.src_stride[0]);
    q.src_s1 = uint32_t(p_.src_stride[1]);
    q.src_s2 = uint32_t(p_.src_stride[2]);
    q.src_offset = offsets[0];
    q.dst_s0 = uint32_t(p_.dst_stride[0]);
    q.dst_s1 = uint32_t(p_.dst_stride[1]);
    q.dst_s2 = uint32_t(p_.dst_stride[2]);
    q.dst_offset = offsets[1];
    const Device& dev = dst_.device();
    launch(dev, op_, kStridedCopy.kernel(), q, {args[0], args[1]}, grid_1d((count + 255) / 256, dev.runtime().limits()));
  }

  const char* op_;
  const CopyPlan& p_;
  Tensor& dst_;
  Side sides_[2];
  uint64_t limit_ = 0;
};

}  // namespace

uint64_t alignment_slack(const Tensor& t, uint64_t begin) {
  return (t.byte_offset() + begin) % t.device().runtime().limits().storage_offset_alignment;
}

AlignedRange aligned_range(const Tensor& t, uint64_t begin, uint64_t end) {
  const uint64_t start = t.byte_offset() + begin - alignment_slack(t, begin);
  AlignedRange r;
  r.arg = gpu::Arg{&t.buffer(), start, std::max<uint64_t>(4, t.byte_offset() + end - start)};
  r.shift = uint32_t((t.byte_offset() - start) / 4);  // wraps when the binding starts past the tensor
  return r;
}

void strided_copy(const char* op, const Tensor& src, const CopyPlan& p, Tensor& dst) {
  const uint64_t count = uint64_t(p.count());
  if (count == 0) return;
  const Device& dev = dst.device();
  const uint64_t limit = dev.runtime().binding_limit();
  if (src.nbytes() > limit || dst.nbytes() > limit) {
    Splitter(op, src, p, dst).run(0, Box{});
    return;
  }
  // Whole vec4s on both sides (rows of a multiple of 4 at offsets and
  // strides of multiples of 4; both bindings start 256-byte aligned): the
  // vec4 kernel, every figure divided by 4.
  bool vec4 = p.dims[3] % 4 == 0 && p.src_offset % 4 == 0 && p.dst_offset % 4 == 0 &&
              src.byte_offset() % 16 == 0 && dst.byte_offset() % 16 == 0;
  for (int l = 0; l < 3; ++l) vec4 = vec4 && p.src_stride[l] % 4 == 0 && p.dst_stride[l] % 4 == 0;
  const int64_t w = vec4 ? 4 : 1;
  StridedCopyParams q{uint32_t(count / w),           uint32_t(p.dims[1]),           uint32_t(p.dims[2]),
                      uint32_t(p.dims[3] / w),       uint32_t(p.src_stride[0] / w), uint32_t(p.src_stride[1] / w),
                      uint32_t(p.src_stride[2] / w), uint32_t(p.src_offset / w),    uint32_t(p.dst_stride[0] / w),
                      uint32_t(p.dst_stride[1] / w), uint32_t(p.dst_stride[2] / w), uint32_t(p.dst_offset / w)};
  launch(dev, op, (vec4 ? kStridedCopyVec4 : kStridedCopy).kernel(), q, {arg(src), arg(dst)},
         grid_1d((count / w + 255) / 256, dev.runtime().limits()));
}

}  // namespace forge::webgpu
