// Host side of rope_append (shaders/rope_append.wgsl). For one sequence only
// the cache slots written are bound (from the aligned offset at or before
// slot `at`), so a long cache does not run into the binding limit.
#include "forge_shaders.h"
#include "webgpu/launch.h"
#include "webgpu/llama_kernels.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kRopeAppend{"rope_append", shaders::rope_append};

// Mirrors `struct Params` of shaders/rope_append.wgsl.
struct RopeAppendParams {
  uint32_t tokens, seq, nh, nkv, head_dim, cap, at, cache_first;
};
static_assert(sizeof(RopeAppendParams) == 32);

}  // namespace

bool rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                 int64_t at) {
  const Device& dev = q.device();
  const gpu::Runtime& rt = dev.runtime();
  const int64_t B = q.dim(0), T = q.dim(1), nh = q.dim(2), hd = q.dim(3), nkv = k.dim(2), cap = k_cache.dim(1);
  const uint64_t D = uint64_t(nkv * hd), align = rt.limits().storage_offset_alignment;
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &table, &k_cache, &v_cache})
    if (t->byte_offset() % align != 0) return false;
  // The cache range bound: whole for several sequences; for one, from the
  // aligned byte at or before slot `at` (`first` elements before it) to the
  // end of slot at + T - 1, and the kernel counts slots from there.
  uint64_t off = 0, first = 0, bytes = k_cache.nbytes();
  int64_t slot0 = at;
  if (B == 1) {
    const uint64_t start = uint64_t(at) * D * 4;
    off = start / align * align;
    first = (start - off) / 4;
    bytes = uint64_t(T) * D * 4 + (start - off);
    slot0 = 0;
  }
  const uint64_t limit = rt.binding_limit();
  if (bytes > limit || q.nbytes() > limit || k.nbytes() > limit || table.nbytes() > limit) return false;
  const uint64_t per = uint64_t(nh) * uint64_t(hd) / 2 + D / 2 + D;
  const uint64_t invocations = uint64_t(B * T) * per;
  if (invocations > UINT32_MAX) return false;
  RopeAppendParams p{uint32_t(B * T), uint32_t(T), uint32_t(nh), uint32_t(nkv),
                     uint32_t(hd),    uint32_t(cap), uint32_t(slot0), uint32_t(first)};
  launch(dev, "rope_append", kRopeAppend, p,
         {arg(q), arg(k), arg(v), arg(table), arg(k_cache, off, bytes), arg(v_cache, off, bytes)},
         grid_1d((invocations + 255) / 256, rt.limits()));
  return true;
}

}  // namespace forge::webgpu
