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

namespace {

// A rope table of at least `rows` rows for head_dim hd: [>= rows, hd / 2, 2].
void check_table(const char* op, const Tensor& table, int64_t rows, int64_t hd) {
  if (table.rank() != 3 || table.dim(0) < rows || table.dim(1) != hd / 2 || table.dim(2) != 2)
    throw ShapeError("[" + std::string(op) + "] table must be [>= " + S(rows) + ", " + S(hd / 2) + ", 2], got " +
                     table.describe());
}

// On WebGPU a packed source and the two caches are written or read in one
// dispatch, so they may not share storage.
void check_apart(const char* op, const Tensor& qkv, const Tensor& k_cache, const Tensor& v_cache) {
  if (qkv.device().is_webgpu() && (&k_cache.buffer() == &v_cache.buffer() || &k_cache.buffer() == &qkv.buffer() ||
                                   &v_cache.buffer() == &qkv.buffer()))
    throw DeviceError("[" + std::string(op) + "] qkv and the caches must not share storage");
}

// The checks rope_append and rope_append_rows share: dtypes, devices and
// shapes. `rows`: q [n, 1, ..] against caches of at least n rows.
void check_rope_append(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& table,
                       const Tensor& k_cache, const Tensor& v_cache, bool rows) {
  check::same_device(op, {&q, &k, &v, &table, &k_cache, &v_cache});
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v},
                                {"table", &table}, {"k_cache", &k_cache}, {"v_cache", &v_cache}})
    check::dtype(op, name, *t, DType::F32);
  auto fail = [&](const std::string& what) {
    throw ShapeError("[" + std::string(op) + "] " + what + " (q " + q.describe() + ", k " + k.describe() + ", v " +
                     v.describe() + ", k_cache " + k_cache.describe() + ", v_cache " + v_cache.describe() + ")");
  };
  if (q.rank() != 4 || k.rank() != 4 || k_cache.rank() != 4) fail("q, k and the caches must be rank 4");
  const int64_t B = q.dim(0), T = q.dim(1), hd = q.dim(3), nkv = k.dim(2), cap = k_cache.dim(1);
  if (k.dim(0) != B || k.dim(1) != T || k.dim(3) != hd) fail("k must be [B, T, nkv, head_dim] like q");
  if (v.shape() != k.shape()) fail("v must have k's shape");
  if (rows && T != 1) fail("q must be [n, 1, nh, head_dim]: one token of each row");
  const int64_t cache_rows = rows ? k_cache.dim(0) : B;
  if (k_cache.shape() != Shape{cache_rows, cap, nkv, hd} || v_cache.shape() != k_cache.shape() || cache_rows < B)
    fail(rows ? "the caches must be [rows >= n, cap, nkv, head_dim] for k's n, nkv and head_dim"
              : "the caches must be [B, cap, nkv, head_dim] for k's B, nkv and head_dim");
  if (hd % 2 != 0) fail("head_dim must be even");
  check_table(op, table, rows ? B : T, hd);
}

// The rows forms' slots: one per row, each inside the cache, as the kernels'
// u32 positions on `device` (WebGPU only).
Tensor row_slots(const char* op, const std::vector<int64_t>& at, int64_t n, int64_t cap, const Device& device) {
  if (int64_t(at.size()) != n)
    throw ValueError("[" + std::string(op) + "] " + S(int64_t(at.size())) + " positions for " + S(n) + " rows");
  std::vector<uint32_t> slots(at.size());
  for (size_t i = 0; i < at.size(); ++i) {
    if (at[i] < 0 || at[i] >= cap)
      throw ValueError("[" + std::string(op) + "] row " + S(int64_t(i)) + " position " + S(at[i]) +
                       " outside the cache capacity " + S(cap));
    slots[i] = uint32_t(at[i]);
  }
  return device.is_webgpu() ? Tensor::from_vector(slots, {n}, device) : Tensor();
}

}  // namespace

void rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                 int64_t at) {
  check_rope_append("rope_append", q, k, v, table, k_cache, v_cache, false);
  const int64_t T = q.dim(1), hd = q.dim(3), cap = k_cache.dim(1);
  if (at < 0 || at + T > cap)
    throw ValueError("[rope_append] appending " + S(T) + " positions at " + S(at) + " overflows the cache capacity " +
                     S(cap));
  if (q.numel() == 0) return;
  if (q.device().is_webgpu() && webgpu::rope_append(q, k, v, table, k_cache, v_cache, at)) return;
  rope(q, hd, table);
  rope(k, hd, table);
  kv_append_tokens(k_cache, k, at);
  kv_append_tokens(v_cache, v, at);
}

void rope_append_rows(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                      const std::vector<int64_t>& at) {
  check_rope_append("rope_append_rows", q, k, v, table, k_cache, v_cache, true);
  const int64_t n = q.dim(0), nh = q.dim(2), hd = q.dim(3), nkv = k.dim(2);
  const Tensor slots = row_slots("rope_append_rows", at, n, k_cache.dim(1), q.device());
  if (q.numel() == 0) return;
  if (q.device().is_webgpu() && webgpu::rope_append(q, k, v, table, k_cache, v_cache, 0, &slots)) return;
  // The rows as one sequence of n tokens: token i takes table row i.
  Tensor qs = q.reshape({1, n, nh, hd}), ks = k.reshape({1, n, nkv, hd});
  rope(qs, hd, table);
  rope(ks, hd, table);
  kv_append_rows(k_cache, k, 0, at);
  kv_append_rows(v_cache, v, 0, at);
}

Tensor rope_append_packed(const Tensor& qkv, int64_t nh, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                          int64_t at) {
  const char* op = "rope_append_packed";
  check::same_device(op, {&qkv, &table, &k_cache, &v_cache});
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"qkv", &qkv}, {"table", &table},
                                {"k_cache", &k_cache}, {"v_cache", &v_cache}})
    check::dtype(op, name, *t, DType::F32);
  auto fail = [&](const std::string& what) {
    throw ShapeError("[rope_append_packed] " + what + " (qkv " + qkv.describe() + ", nh " + S(nh) + ", k_cache " +
                     k_cache.describe() + ", v_cache " + v_cache.describe() + ")");
  };
  if (qkv.rank() != 3 || k_cache.rank() != 4) fail("qkv must be [B, T, width] and the caches [B, cap, nkv, hd]");
  const int64_t B = qkv.dim(0), T = qkv.dim(1), cap = k_cache.dim(1), nkv = k_cache.dim(2), hd = k_cache.dim(3);
  if (v_cache.shape() != k_cache.shape() || k_cache.dim(0) != B) fail("the caches must be [B, cap, nkv, hd] for qkv's B");
  if (nh < 1 || qkv.dim(2) != (nh + 2 * nkv) * hd) fail("qkv must be [B, T, (nh + 2 * nkv) * hd]");
  if (hd % 2 != 0) fail("head_dim must be even");
  if (at < 0 || at + T > cap)
    throw ValueError("[rope_append_packed] appending " + S(T) + " positions at " + S(at) +
                     " overflows the cache capacity " + S(cap));
  check_table(op, table, T, hd);
  check_apart(op, qkv, k_cache, v_cache);
  Tensor q = Tensor::empty({B, T, nh, hd}, DType::F32, qkv.device());
  if (q.numel() == 0) return q;
  if (qkv.device().is_webgpu() && webgpu::rope_append_packed(qkv, q, table, k_cache, v_cache, at)) return q;
  const int64_t kd = nkv * hd;
  const std::vector<Tensor> parts = split_columns(qkv.reshape({B * T, qkv.dim(2)}), {nh * hd, kd, kd});
  q = parts[0].reshape({B, T, nh, hd});
  Tensor k = parts[1].reshape({B, T, nkv, hd});
  rope_append(q, k, parts[2].reshape({B, T, nkv, hd}), table, k_cache, v_cache, at);
  return q;
}

namespace {

// qkv_append's and qkv_append_rows' checks; returns the caches' (nh, hd).
std::pair<int64_t, int64_t> check_qkv_append(const char* op, const Tensor& qkv, const Tensor& k_cache,
                                             const Tensor& v_cache, bool rows) {
  check::same_device(op, {&qkv, &k_cache, &v_cache});
  check::dtype(op, "qkv", qkv, DType::F32);
  check::dtype(op, "k_cache", k_cache, DType::F32);
  check::dtype(op, "v_cache", v_cache, DType::F32);
  auto fail = [&](const std::string& what) {
    throw ShapeError("[" + std::string(op) + "] " + what + " (qkv " + qkv.describe() + ", k_cache " +
                     k_cache.describe() + ", v_cache " + v_cache.describe() + ")");
  };
  if (qkv.rank() != 3 || k_cache.rank() != 4) fail("qkv must be [B, T, 3C] and the caches [B, cap, nh, hd]");
  const int64_t B = qkv.dim(0), nh = k_cache.dim(2), hd = k_cache.dim(3);
  if (v_cache.shape() != k_cache.shape()) fail("v_cache must have k_cache's shape");
  if (rows && qkv.dim(1) != 1) fail("qkv must be [n, 1, 3C]: one token of each row");
  if ((rows ? k_cache.dim(0) < B : k_cache.dim(0) != B) || qkv.dim(2) != 3 * nh * hd)
    fail(rows ? "qkv must be [n, 1, 3 * nh * hd] for caches of at least n rows"
              : "qkv must be [B, T, 3 * nh * hd] for the caches' B, nh, hd");
  check_apart(op, qkv, k_cache, v_cache);
  return {nh, hd};
}

}  // namespace

Tensor qkv_append(const Tensor& qkv, Tensor& k_cache, Tensor& v_cache, int64_t at) {
  const auto [nh, hd] = check_qkv_append("qkv_append", qkv, k_cache, v_cache, false);
  const int64_t B = qkv.dim(0), T = qkv.dim(1), cap = k_cache.dim(1);
  if (at < 0 || at + T > cap)
    throw ValueError("[qkv_append] appending " + S(T) + " positions at " + S(at) + " overflows the cache capacity " +
                     S(cap));
  Tensor q = Tensor::empty({B, T, nh, hd}, DType::F32, qkv.device());
  if (q.numel() == 0) return q;
  if (qkv.device().is_webgpu() && webgpu::qkv_append(qkv, q, k_cache, v_cache, at)) return q;
  const QKV p = split_heads(qkv, nh);  // each [B, nh, T, hd]
  // Copies: clang before 16 cannot capture structured bindings (the wasm build's em++).
  auto tokens = [&, heads = nh, dim = hd](const Tensor& t) { return merge_heads(t).reshape({B, T, heads, dim}); };
  kv_append_tokens(k_cache, tokens(p.k), at);
  kv_append_tokens(v_cache, tokens(p.v), at);
  return tokens(p.q);
}

Tensor qkv_append_rows(const Tensor& qkv, Tensor& k_cache, Tensor& v_cache, const std::vector<int64_t>& at) {
  const auto [nh, hd] = check_qkv_append("qkv_append_rows", qkv, k_cache, v_cache, true);
  const int64_t n = qkv.dim(0);
  const Tensor slots = row_slots("qkv_append_rows", at, n, k_cache.dim(1), qkv.device());
  Tensor q = Tensor::empty({n, 1, nh, hd}, DType::F32, qkv.device());
  if (q.numel() == 0) return q;
  if (qkv.device().is_webgpu() && webgpu::qkv_append(qkv, q, k_cache, v_cache, 0, &slots)) return q;
  const QKV p = split_heads(qkv, nh);  // each [n, nh, 1, hd]: with one position, the layout of [n, 1, nh, hd]
  kv_append_rows(k_cache, p.k.reshape({n, 1, nh, hd}), 0, at);
  kv_append_rows(v_cache, p.v.reshape({n, 1, nh, hd}), 0, at);
  return p.q.reshape({n, 1, nh, hd});
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
