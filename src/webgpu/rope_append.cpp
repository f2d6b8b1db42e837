// Host side of rope_append (shaders/rope_append.wgsl) and qkv_append
// (shaders/qkv_append.wgsl). For one sequence only the cache slots written
// are bound (from the aligned offset at or before slot `at`), so a long cache
// does not run into the binding limit; the rows form binds the whole cache.
#include "forge_shaders.h"
#include "webgpu/launch.h"
#include "webgpu/llama_kernels.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kRopeAppend{"rope_append", shaders::rope_append};
const gpu::Kernel kQkvAppend{"qkv_append", shaders::qkv_append};

// Mirrors `struct Params` of shaders/rope_append.wgsl.
struct RopeAppendParams {
  uint32_t tokens, seq, nh, nkv, head_dim, cap, at, cache_first, rows, pad0, pad1, pad2;
};
static_assert(sizeof(RopeAppendParams) == 48);

// Mirrors `struct Params` of shaders/qkv_append.wgsl.
struct QkvAppendParams {
  uint32_t tokens, seq, width, cap, at, cache_first, rows, pad1;
};
static_assert(sizeof(QkvAppendParams) == 32);

// The range of a cache [B, cap, D] that appending T positions at slot `at`
// binds: whole for several sequences; for one, from the aligned byte at or
// before slot `at` (`first` elements before it) to the end of slot at + T -
// 1, the kernel counting slots from there (slot0). `rows`: whole.
struct CacheRange {
  uint64_t off = 0, first = 0, bytes = 0;
  int64_t slot0 = 0;
};
CacheRange cache_range(const Tensor& cache, int64_t B, int64_t T, uint64_t D, int64_t at, uint64_t align, bool rows) {
  CacheRange r{0, 0, cache.nbytes(), at};
  if (B == 1 && !rows) {
    const uint64_t start = uint64_t(at) * D * 4;
    r.off = start / align * align;
    r.first = (start - r.off) / 4;
    r.bytes = uint64_t(T) * D * 4 + (start - r.off);
    r.slot0 = 0;
  }
  return r;
}

}  // namespace

namespace {

// rope_append.wgsl over q [B, T, nh, hd] and the k and v bindings: k and v
// [B, T, nkv, hd], or (packed) an unused k and v the joined [B, T, (nh +
// 2 nkv) hd] source; false when a binding exceeds the device's limits.
bool launch_rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache,
                        Tensor& v_cache, int64_t at, const Tensor* rows_at, bool packed) {
  const Device& dev = q.device();
  const gpu::Runtime& rt = dev.runtime();
  const int64_t B = q.dim(0), T = q.dim(1), nh = q.dim(2), hd = q.dim(3), nkv = k_cache.dim(2), cap = k_cache.dim(1);
  const uint64_t D = uint64_t(nkv * hd), align = rt.limits().storage_offset_alignment;
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &table, &k_cache, &v_cache})
    if (t->byte_offset() % align != 0) return false;
  const auto [off, first, bytes, slot0] = cache_range(k_cache, B, T, D, at, align, rows_at);
  const uint64_t limit = rt.binding_limit();
  if (bytes > limit || q.nbytes() > limit || k.nbytes() > limit || v.nbytes() > limit || table.nbytes() > limit)
    return false;
  const uint64_t per = uint64_t(nh) * uint64_t(hd) / 2 + D / 2 + D;
  const uint64_t invocations = uint64_t(B * T) * per;
  if (invocations > UINT32_MAX || uint64_t(v.numel()) > UINT32_MAX) return false;
  RopeAppendParams p{uint32_t(B * T),  uint32_t(T),     uint32_t(nh),       uint32_t(nkv),     uint32_t(hd), uint32_t(cap),
                     uint32_t(slot0), uint32_t(first), rows_at ? 1u : 0u, packed ? 1u : 0u, 0,            0};
  // Where unused, the table stands in for rows_at (both read-only).
  launch(dev, "rope_append", kRopeAppend, p,
         {arg(q), arg(k), arg(v), arg(table), arg(k_cache, off, bytes), arg(v_cache, off, bytes),
          arg(rows_at ? *rows_at : table)},
         grid_1d((invocations + 255) / 256, rt.limits()));
  return true;
}

}  // namespace

bool rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                 int64_t at, const Tensor* rows_at) {
  return launch_rope_append(q, k, v, table, k_cache, v_cache, at, rows_at, false);
}

bool rope_append_packed(const Tensor& qkv, Tensor& q, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                        int64_t at) {
  Tensor unused = Tensor::empty({4}, DType::F32, q.device());  // k's binding: writable, so of its own
  return launch_rope_append(q, unused, qkv, table, k_cache, v_cache, at, nullptr, true);
}

bool qkv_append(const Tensor& qkv, Tensor& q, Tensor& k_cache, Tensor& v_cache, int64_t at, const Tensor* rows_at) {
  const Device& dev = qkv.device();
  const gpu::Runtime& rt = dev.runtime();
  // qkv [B, T, 3C]; the caches hold B sequences, or more rows (rows_at).
  const int64_t B = qkv.dim(0), T = qkv.dim(1), cap = k_cache.dim(1), C = k_cache.dim(2) * k_cache.dim(3);
  const uint64_t align = rt.limits().storage_offset_alignment;
  for (const Tensor* t : std::initializer_list<const Tensor*>{&qkv, &q, &k_cache, &v_cache})
    if (t->byte_offset() % align != 0) return false;
  const auto [off, first, bytes, slot0] = cache_range(k_cache, B, T, uint64_t(C), at, align, rows_at);
  const uint64_t limit = rt.binding_limit();
  if (bytes > limit || qkv.nbytes() > limit) return false;
  const uint64_t invocations = uint64_t(qkv.numel());
  if (invocations > UINT32_MAX) return false;
  QkvAppendParams p{uint32_t(B * T),   uint32_t(T),        uint32_t(C), uint32_t(cap), uint32_t(slot0),
                    uint32_t(first), rows_at ? 1u : 0u, 0};
  // Where unused, qkv stands in for rows_at (both read-only).
  launch(dev, "qkv_append", kQkvAppend, p,
         {arg(qkv), arg(q), arg(k_cache, off, bytes), arg(v_cache, off, bytes), arg(rows_at ? *rows_at : qkv)},
         grid_1d((invocations + 255) / 256, rt.limits()));
  return true;
}

}  // namespace forge::webgpu
