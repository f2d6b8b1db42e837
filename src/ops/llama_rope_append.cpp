// rope_append and qkv_append: validation, and the fused WebGPU kernel or, on
// the CPU (where fusing saves nothing) and for caches larger than one storage
// binding, the ops it stands for.
#include "forge/ops.h"
#include "gpu/runtime.h"
#include "ops/check.h"
#include "webgpu/kernels.h"
#include "webgpu/llama_kernels.h"

namespace forge {

namespace {
std::string S(int64_t v) { return std::to_string(v); }
}  // namespace

void rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                 int64_t at) {
  const char* op = "rope_append";
  check::same_device(op, {&q, &k, &v, &table, &k_cache, &v_cache});
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v},
                                {"table", &table}, {"k_cache", &k_cache}, {"v_cache", &v_cache}})
    check::dtype(op, name, *t, DType::F32);
  auto fail = [&](const std::string& what) {
    throw ShapeError(std::string("[rope_append] ") + what + " (q " + q.describe() + ", k " + k.describe() + ", v " +
                     v.describe() + ", k_cache " + k_cache.describe() + ", v_cache " + v_cache.describe() + ")");
  };
  if (q.rank() != 4 || k.rank() != 4 || k_cache.rank() != 4) fail("q, k and the caches must be rank 4");
  const int64_t B = q.dim(0), T = q.dim(1), hd = q.dim(3), nkv = k.dim(2), cap = k_cache.dim(1);
  if (k.dim(0) != B || k.dim(1) != T || k.dim(3) != hd) fail("k must be [B, T, nkv, head_dim] like q");
  if (v.shape() != k.shape()) fail("v must have k's shape");
  if (k_cache.shape() != Shape{B, cap, nkv, hd} || v_cache.shape() != k_cache.shape())
    fail("the caches must be [B, cap, nkv, head_dim] for k's B, nkv and head_dim");
  if (hd % 2 != 0) fail("head_dim must be even");
  if (at < 0 || at + T > cap)
    throw ValueError("[rope_append] appending " + S(T) + " positions at " + S(at) + " overflows the cache capacity " +
                     S(cap));
  if (table.rank() != 3 || table.dim(0) < T || table.dim(1) != hd / 2 || table.dim(2) != 2)
    throw ShapeError("[rope_append] table must be [>= " + S(T) + ", " + S(hd / 2) + ", 2], got " + table.describe());
  if (q.numel() == 0) return;
  if (q.device().is_webgpu() && webgpu::rope_append(q, k, v, table, k_cache, v_cache, at)) return;
  rope(q, hd, table);
  rope(k, hd, table);
  kv_append_tokens(k_cache, k, at);
  kv_append_tokens(v_cache, v, at);
}

Tensor qkv_append(const Tensor& qkv, Tensor& k_cache, Tensor& v_cache, int64_t at) {
  const char* op = "qkv_append";
  check::same_device(op, {&qkv, &k_cache, &v_cache});
  check::dtype(op, "qkv", qkv, DType::F32);
  check::dtype(op, "k_cache", k_cache, DType::F32);
  check::dtype(op, "v_cache", v_cache, DType::F32);
  auto fail = [&](const std::string& what) {
    throw ShapeError("[qkv_append] " + what + " (qkv " + qkv.describe() + ", k_cache " + k_cache.describe() +
                     ", v_cache " + v_cache.describe() + ")");
  };
  if (qkv.rank() != 3 || k_cache.rank() != 4) fail("qkv must be [B, T, 3C] and the caches [B, cap, nh, hd]");
  const int64_t B = qkv.dim(0), T = qkv.dim(1), cap = k_cache.dim(1), nh = k_cache.dim(2), hd = k_cache.dim(3);
  if (v_cache.shape() != k_cache.shape()) fail("v_cache must have k_cache's shape");
  if (k_cache.dim(0) != B || qkv.dim(2) != 3 * nh * hd) fail("qkv must be [B, T, 3 * nh * hd] for the caches' B, nh, hd");
  if (at < 0 || at + T > cap)
    throw ValueError("[qkv_append] appending " + S(T) + " positions at " + S(at) + " overflows the cache capacity " +
                     S(cap));
  if (qkv.device().is_webgpu() && (&k_cache.buffer() == &v_cache.buffer() || &k_cache.buffer() == &qkv.buffer() ||
                                   &v_cache.buffer() == &qkv.buffer()))
    throw DeviceError("[qkv_append] qkv and the caches must not share storage");
  Tensor q = Tensor::empty({B, T, nh, hd}, DType::F32, qkv.device());
  if (q.numel() == 0) return q;
  if (qkv.device().is_webgpu() && webgpu::qkv_append(qkv, q, k_cache, v_cache, at)) return q;
  const QKV p = split_heads(qkv, nh);  // each [B, nh, T, hd]
  auto tokens = [&](const Tensor& t) { return merge_heads(t).reshape({B, T, nh, hd}); };
  kv_append_tokens(k_cache, tokens(p.k), at);
  kv_append_tokens(v_cache, tokens(p.v), at);
  return tokens(p.q);
}

Tensor qkv_append(const Tensor& x, const Tensor& w, const MatmulOptions& o, Tensor& k_cache, Tensor& v_cache,
                  int64_t at) {
  if (o.transpose_a || o.transpose_b || o.alpha != 1.0f || o.b_rows >= 0 || o.gelu || o.residual)
    throw ValueError("[qkv_append] the product takes a bias and a row norm only");
  check::same_device("qkv_append", {&x, &w, &k_cache, &v_cache});
  // One token of one sequence on WebGPU, every operand as the kernel takes
  // it: the product and the append in one dispatch. Anything else (and any
  // malformed operand, which the ops below name) takes the two ops.
  const bool one_token = x.device().is_webgpu() && x.rank() == 2 && x.dim(0) == 1 && w.rank() == 2 &&
                         k_cache.rank() == 4 && k_cache.dim(0) == 1 && v_cache.shape() == k_cache.shape() &&
                         x.dim(1) == w.dim(0) && w.dim(1) == 3 * k_cache.dim(2) * k_cache.dim(3) && at >= 0 &&
                         at < k_cache.dim(1) && x.dtype() == DType::F32 && w.dtype() == DType::F32 &&
                         k_cache.dtype() == DType::F32 && v_cache.dtype() == DType::F32 &&
                         &k_cache.buffer() != &v_cache.buffer() && k_cache.numel() > 0;
  const bool bias_ok = !o.bias || (o.bias->device() == x.device() && o.bias->dtype() == DType::F32 &&
                                   o.bias->rank() == 1 && o.bias->dim(0) == w.dim(1));
  if (!one_token || !bias_ok) {
    const int64_t B = k_cache.rank() == 4 ? k_cache.dim(0) : 1;
    const Tensor qkv = matmul(x, w, o);
    if (B == 0 || qkv.rank() != 2 || qkv.dim(0) % B != 0)
      throw ShapeError("[qkv_append] x's rows " + x.describe() + " are not B x T for the caches' B " +
                       k_cache.describe());
    return qkv_append(qkv.reshape({B, qkv.dim(0) / B, qkv.dim(1)}), k_cache, v_cache, at);
  }
  // A norm the product does not apply as it reads (a LayerNorm on a CPU
  // driver) is its own op before it.
  MatmulOptions plain = o;
  const Tensor* xin = &x;
  Tensor normed;
  const webgpu::MatvecFusion f = webgpu::matvec_fusion(o.norm);
  if (o.norm) {
    check::row_norm("qkv_append", x, *o.norm);
    MatmulPlan plan;
    plan.m = 1, plan.n = w.dim(1), plan.k = w.dim(0), plan.lda = plan.k, plan.ldb = plan.n;
    if (!webgpu::matvec_fusable(plan, f, x.device().runtime().cpu_driver())) {
      normed = row_norm(x, *o.norm);
      xin = &normed;
      plain.norm = nullptr;
    }
  }
  Tensor q = Tensor::empty({1, 1, k_cache.dim(2), k_cache.dim(3)}, DType::F32, x.device());
  if (webgpu::matvec_qkv_append(*xin, w, o.bias, plain.norm ? &f : nullptr, q, k_cache, v_cache, at)) return q;
  return qkv_append(matmul(*xin, w, plain).reshape({1, 1, w.dim(1)}), k_cache, v_cache, at);
}

}  // namespace forge
