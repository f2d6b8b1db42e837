// rope_append and rope_append_attention: validation, and the fused WebGPU
// kernels or, on the CPU (where fusing saves nothing) and where a kernel
// does not apply, the ops they stand for.
#include "forge/ops.h"
#include "ops/attention_plan.h"
#include "ops/check.h"
#include "webgpu/attention_kernels.h"
#include "webgpu/llama_kernels.h"

namespace forge {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// The checks of rope_append (table null: no rotation), under op's name.
void check_append(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* table,
                  const Tensor& k_cache, const Tensor& v_cache, int64_t at) {
  const Tensor& tab = table ? *table : q;
  check::same_device(op, {&q, &k, &v, &tab, &k_cache, &v_cache});
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v},
                                {"table", &tab}, {"k_cache", &k_cache}, {"v_cache", &v_cache}})
    check::dtype(op, name, *t, DType::F32);
  auto fail = [&](const std::string& what) {
    throw ShapeError(std::string("[") + op + "] " + what + " (q " + q.describe() + ", k " + k.describe() + ", v " +
                     v.describe() + ", k_cache " + k_cache.describe() + ", v_cache " + v_cache.describe() + ")");
  };
  if (q.rank() != 4 || k.rank() != 4 || k_cache.rank() != 4) fail("q, k and the caches must be rank 4");
  const int64_t B = q.dim(0), T = q.dim(1), hd = q.dim(3), nkv = k.dim(2), cap = k_cache.dim(1);
  if (k.dim(0) != B || k.dim(1) != T || k.dim(3) != hd) fail("k must be [B, T, nkv, head_dim] like q");
  if (v.shape() != k.shape()) fail("v must have k's shape");
  if (k_cache.shape() != Shape{B, cap, nkv, hd} || v_cache.shape() != k_cache.shape())
    fail("the caches must be [B, cap, nkv, head_dim] for k's B, nkv and head_dim");
  if (table && hd % 2 != 0) fail("head_dim must be even");
  if (at < 0 || at + T > cap)
    throw ValueError(std::string("[") + op + "] appending " + S(T) + " positions at " + S(at) +
                     " overflows the cache capacity " + S(cap));
  if (table && (table->rank() != 3 || table->dim(0) < T || table->dim(1) != hd / 2 || table->dim(2) != 2))
    throw ShapeError(std::string("[") + op + "] table must be [>= " + S(T) + ", " + S(hd / 2) + ", 2], got " +
                     table->describe());
}

}  // namespace

void rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                 int64_t at) {
  check_append("rope_append", q, k, v, &table, k_cache, v_cache, at);
  const int64_t B = q.dim(0), T = q.dim(1), hd = q.dim(3), nkv = k.dim(2), cap = k_cache.dim(1);
  if (q.numel() == 0) return;
  if (q.device().is_webgpu() && webgpu::rope_append(q, k, v, table, k_cache, v_cache, at)) return;
  rope(q, hd, table);
  rope(k, hd, table);
  const int64_t D = nkv * hd;
  Tensor kc = k_cache.reshape({B, 1, cap, D}), vc = v_cache.reshape({B, 1, cap, D});
  kv_append(kc, k.reshape({B, 1, T, D}), at);
  kv_append(vc, v.reshape({B, 1, T, D}), at);
}

Tensor rope_append_attention(Tensor& q, Tensor& k, const Tensor& v, const Tensor* table, Tensor& k_cache,
                             Tensor& v_cache, int64_t at, const AttentionOptions& o) {
  const char* op = "rope_append_attention";
  check_append(op, q, k, v, table, k_cache, v_cache, at);
  const AttentionPlan plan = make_attention_plan(op, q, k_cache, v_cache, o, nullptr);
  if (q.device().is_webgpu() && q.numel() > 0) {
    Tensor out = Tensor::empty(q.shape(), DType::F32, q.device());
    if (webgpu::attention_decode_append(q, k, v, table, k_cache, v_cache, at, plan, out)) return out;
  }
  if (table) {
    rope_append(q, k, v, *table, k_cache, v_cache, at);
  } else {
    const int64_t B = q.dim(0), T = q.dim(1), D = k.dim(2) * k.dim(3), cap = k_cache.dim(1);
    Tensor kc = k_cache.reshape({B, 1, cap, D}), vc = v_cache.reshape({B, 1, cap, D});
    kv_append(kc, k.reshape({B, 1, T, D}), at);
    kv_append(vc, v.reshape({B, 1, T, D}), at);
  }
  return flash_attention_v2(q, k_cache, v_cache, o);
}

}  // namespace forge
