// flash attention: validation, the resolved plan (scale and dropout threshold
// in double on the host) and dispatch.
#include <cmath>
#include <vector>

#include "cpu/attention_kernels.h"
#include "forge/ops/attention.h"
#include "forge/ops/gather.h"
#include "ops/check.h"
#include "webgpu/attention_kernels.h"

namespace forge {

namespace {

std::string shapes(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask) {
  std::string s = check::operands({{"q", &q}, {"k", &k}, {"v", &v}});
  if (mask) s += ", mask " + mask->describe();
  return s;
}

// The plan for q [B, Sq, H, D] and k, v [B, Sk, Hkv, D] (validated by the
// caller) on `dev`, with the options and mask checked; `what` names the
// operands in errors.
AttentionPlan plan_for(const char* op, const Shape& qs, const Shape& ks, const Device& dev, const AttentionOptions& o,
                       const Tensor* mask, const std::string& what) {
  auto fail = [&](const std::string& why) { throw ShapeError(std::string("[") + op + "] " + why + ": " + what); };
  AttentionPlan p;
  p.batch = qs[0], p.seq_q = qs[1], p.heads = qs[2], p.head_dim = qs[3];
  p.seq_k = ks[1], p.kv_heads = ks[2];
  if (mask) {
    check::dtype(op, "mask", *mask, DType::F32);
    check::rank(op, "mask", *mask, 4, 4);
    const int64_t want[4] = {p.batch, p.heads, p.seq_q, p.seq_k};
    int64_t stride[4];
    int64_t s = 1;
    for (int d = 3; d >= 0; --d) {
      if (mask->dim(d) != want[d] && mask->dim(d) != 1)
        fail("mask must be [batch|1, num_heads|1, seq_q|1, seq_k|1]");
      stride[d] = mask->dim(d) == 1 ? 0 : s;
      s *= mask->dim(d);
    }
    p.has_mask = true;
    p.mask_sb = stride[0], p.mask_sh = stride[1], p.mask_si = stride[2], p.mask_sj = stride[3];
  }
  if (o.kv_offset < 0 || o.window < 0)
    throw ValueError(std::string("[") + op + "] kv_offset and window must be non-negative, got kv_offset " +
                     std::to_string(o.kv_offset) + ", window " + std::to_string(o.window) + " for " +
                     what);
  if (!(o.dropout_p >= 0.0f && o.dropout_p < 1.0f))
    throw ValueError(std::string("[") + op + "] dropout_p must be in [0, 1), got " + std::to_string(o.dropout_p) +
                     " for " + what);
  if (!std::isfinite(o.scale) || o.scale < 0.0f)
    throw ValueError(std::string("[") + op + "] scale must be finite and non-negative (0 = 1/sqrt(head_dim)), got " +
                     std::to_string(o.scale));
  p.kv_offset = o.kv_offset;
  p.window = o.window;
  p.causal = o.causal;
  p.scale = o.scale > 0.0f ? o.scale : float(1.0 / std::sqrt(double(std::max<int64_t>(p.head_dim, 1))));
  if (o.dropout_p > 0.0f) {
    // As forge::dropout: the same threshold and scale for the same p.
    p.dropout = true;
    p.threshold = uint32_t(std::min(std::floor(double(o.dropout_p) * 4294967296.0), 4294967295.0));
    p.drop_scale = float(1.0 / (1.0 - double(o.dropout_p)));
    p.seed = o.dropout_seed;
  }
  if (dev.is_webgpu() && p.head_dim > webgpu::kAttentionMaxHeadDim)
    throw ShapeError(std::string("[") + op + "] head_dim " + std::to_string(p.head_dim) +
                     " exceeds the WebGPU kernels' limit of " + std::to_string(webgpu::kAttentionMaxHeadDim) + ": " +
                     what);
  return p;
}

AttentionPlan make_plan(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionOptions& o, const Tensor* mask) {
  if (mask) check::same_device(op, {&q, &k, &v, mask});
  else check::same_device(op, {&q, &k, &v});
  check::dtype(op, "q", q, DType::F32);
  check::dtype(op, "k", k, DType::F32);
  check::dtype(op, "v", v, DType::F32);
  check::rank(op, "q", q, 4, 4);
  check::rank(op, "k", k, 4, 4);
  check::rank(op, "v", v, 4, 4);
  auto fail = [&](const std::string& why) {
    throw ShapeError(std::string("[") + op + "] " + why + ": " + shapes(q, k, v, mask));
  };
  if (k.shape() != v.shape()) fail("k and v shapes differ");
  if (q.dim(0) != k.dim(0)) fail("batch sizes differ");
  if (q.dim(3) != k.dim(3)) fail("head_dim differs");
  if (k.dim(2) < 1 || q.dim(2) % k.dim(2) != 0) fail("num_heads must be a multiple of num_kv_heads");
  return plan_for(op, q.shape(), k.shape(), q.device(), o, mask, shapes(q, k, v, mask));
}

bool empty(const AttentionPlan& p) {
  return p.batch == 0 || p.seq_q == 0 || p.heads == 0 || p.head_dim == 0;
}

// The backward's out and grad_out (q's shape, [B, Sq, H, D]) and the saved
// lse ([B, H, Sq], optional), on the device of `in` (q, or the joined qkv).
void check_backward_operands(const char* op, const Tensor& in, const Shape& q_shape, const AttentionPlan& p,
                             const Tensor& out, const Tensor& grad_out, const Tensor* lse) {
  check::same_device(op, {&in, &out, &grad_out});
  check::dtype(op, "out", out, DType::F32);
  check::dtype(op, "grad_out", grad_out, DType::F32);
  if (out.shape() != q_shape || grad_out.shape() != q_shape)
    throw ShapeError(std::string("[") + op + "] out and grad_out must be q's " + shape_str(q_shape) + ": " +
                     check::operands({{"out", &out}, {"grad_out", &grad_out}}));
  if (!lse) return;
  check::same_device(op, {&in, lse});
  check::dtype(op, "lse", *lse, DType::F32);
  if (lse->shape() != Shape{p.batch, p.heads, p.seq_q})
    throw ShapeError(std::string("[") + op + "] lse must be [batch, num_heads, seq_q] = " +
                     shape_str({p.batch, p.heads, p.seq_q}) + ": " + check::operands({{"lse", lse}}));
}

// q, k and v as column blocks of qkv [B, T, (H + 2 Hkv) D].
struct Packed {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  Shape q, kv;  // [B, T, H, D], [B, T, Hkv, D]
  int64_t width() const { return (heads + 2 * kv_heads) * head_dim; }
  int64_t k_col() const { return heads * head_dim; }                // k's first column
  int64_t v_col() const { return (heads + kv_heads) * head_dim; }    // v's
  std::vector<int64_t> widths() const { return {heads * head_dim, kv_heads * head_dim, kv_heads * head_dim}; }
};

Packed packed_operands(const char* op, const Tensor& qkv, int64_t heads, int64_t kv_heads, const Tensor* mask) {
  if (mask) check::same_device(op, {&qkv, mask});
  check::dtype(op, "qkv", qkv, DType::F32);
  check::rank(op, "qkv", qkv, 3, 3);
  const int64_t width = qkv.dim(2);
  // Counts past the width are refused before their sum is formed.
  const bool counts = heads >= 1 && kv_heads >= 1 && heads <= width && kv_heads <= width;
  if (!counts || heads % kv_heads != 0 || width % (heads + 2 * kv_heads) != 0)
    throw ShapeError(std::string("[") + op + "] qkv " + qkv.describe() +
                     " must be [batch, seq, (num_heads + 2 num_kv_heads) * head_dim] with num_heads a multiple of "
                     "num_kv_heads; got num_heads " + std::to_string(heads) + ", num_kv_heads " +
                     std::to_string(kv_heads));
  Packed k;
  k.heads = heads, k.kv_heads = kv_heads, k.head_dim = width / (heads + 2 * kv_heads);
  k.q = {qkv.dim(0), qkv.dim(1), heads, k.head_dim};
  k.kv = {qkv.dim(0), qkv.dim(1), kv_heads, k.head_dim};
  return k;
}

std::string packed_what(const Tensor& qkv, const Packed& k) {
  return "qkv " + qkv.describe() + " as q " + shape_str(k.q) + ", k and v " + shape_str(k.kv);
}

// qkv's q, k and v as dense tensors (copies).
std::vector<Tensor> split_packed(const Tensor& qkv, const Packed& k) {
  std::vector<Tensor> parts = split_columns(qkv, k.widths());
  return {parts[0].reshape(k.q), parts[1].reshape(k.kv), parts[2].reshape(k.kv)};
}

// Whether the kernels read q, k and v inside qkv (and write their gradients
// into one joined tensor) for plan `p`: on WebGPU, where they read at token
// strides (webgpu::attention_*_strided) and k's and v's columns start at
// byte offsets the device binds. Elsewhere the op splits qkv into copies.
bool reads_packed(const Tensor& qkv, const Packed& k, const AttentionPlan& p, bool backward) {
  const Device& dev = qkv.device();
  if (!dev.is_webgpu() || empty(p)) return false;
  const uint64_t align = dev.runtime().limits().storage_offset_alignment;
  for (int64_t col : {int64_t(0), k.k_col(), k.v_col()})
    if ((qkv.byte_offset() + uint64_t(col) * 4) % align != 0) return false;
  return backward ? webgpu::attention_backward_strided(p, dev) : webgpu::attention_forward_strided(p, dev);
}

// x [B, T, W] (qkv, or its gradient) as q's, k's and v's column blocks:
// flat views from each block's first column on, which the kernels index at
// the token stride W.
std::vector<Tensor> packed_views(const Tensor& x, const Packed& k) {
  const Tensor flat = x.reshape({x.numel()});
  return {flat, flat.slice_rows(k.k_col(), flat.numel()), flat.slice_rows(k.v_col(), flat.numel())};
}

}  // namespace

AttentionForward flash_attention_v2_lse(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const AttentionOptions& options, const Tensor* mask) {
  const char* op = "flash_attention_v2";
  AttentionPlan p = make_plan(op, q, k, v, options, mask);
  AttentionForward r;
  if (empty(p) || p.seq_k == 0) {  // nothing to attend to: zeros, lse -inf
    r.out = Tensor::zeros(q.shape(), DType::F32, q.device());
    r.lse = Tensor::from_vector(std::vector<float>(size_t(p.batch * p.heads * p.seq_q), -INFINITY),
                                {p.batch, p.heads, p.seq_q}, q.device());
    return r;
  }
  // Every element of both is written by the backend.
  r.out = Tensor::empty(q.shape(), DType::F32, q.device());
  r.lse = Tensor::empty({p.batch, p.heads, p.seq_q}, DType::F32, q.device());
  if (q.device().is_cpu()) cpu::attention_forward(q, k, v, mask, p, r.out, r.lse);
  else webgpu::attention_forward(q, k, v, mask, p, r.out, r.lse);
  return r;
}

Tensor flash_attention_v2(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options,
                          const Tensor* mask) {
  return flash_attention_v2_lse(q, k, v, options, mask).out;
}

Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  const char* op = "flash_attention";
  check::same_device(op, {&q, &k, &v});
  check::rank(op, "q", q, 2, 2);
  check::rank(op, "k", k, 2, 2);
  check::rank(op, "v", v, 2, 2);
  AttentionOptions o;
  o.causal = causal;
  Tensor out = flash_attention_v2(q.reshape({1, q.dim(0), 1, q.dim(1)}), k.reshape({1, k.dim(0), 1, k.dim(1)}),
                                  v.reshape({1, v.dim(0), 1, v.dim(1)}), o);
  return out.reshape(q.shape());
}

AttentionGrads flash_attention_v2_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                           const Tensor& grad_out, const AttentionOptions& options,
                                           const Tensor* mask, const Tensor* lse) {
  const char* op = "flash_attention_v2_backward";
  AttentionPlan p = make_plan(op, q, k, v, options, mask);
  check_backward_operands(op, q, q.shape(), p, out, grad_out, lse);
  Tensor lse_owned;
  AttentionGrads g;
  const bool none = empty(p) || p.seq_k == 0;
  auto grad = [&](const Shape& s) {  // every element written by the backend unless `none`
    return none ? Tensor::zeros(s, DType::F32, q.device()) : Tensor::empty(s, DType::F32, q.device());
  };
  g.grad_q = grad(q.shape());
  g.grad_k = grad(k.shape());
  g.grad_v = grad(v.shape());
  if (none) return g;
  if (!lse) {
    lse_owned = flash_attention_v2_lse(q, k, v, options, mask).lse;
    lse = &lse_owned;
  }
  if (q.device().is_cpu())
    cpu::attention_backward(q, k, v, mask, out, grad_out, *lse, p, g.grad_q, g.grad_k, g.grad_v);
  else webgpu::attention_backward(q, k, v, mask, out, grad_out, *lse, p, g.grad_q, g.grad_k, g.grad_v);
  return g;
}

AttentionForward flash_attention_v2_packed_lse(const Tensor& qkv, int64_t num_heads, int64_t num_kv_heads,
                                               const AttentionOptions& options, const Tensor* mask) {
  const char* op = "flash_attention_v2_packed";
  const Packed k = packed_operands(op, qkv, num_heads, num_kv_heads, mask);
  AttentionPlan p = plan_for(op, k.q, k.kv, qkv.device(), options, mask, packed_what(qkv, k));
  if (!reads_packed(qkv, k, p, false)) {
    const std::vector<Tensor> s = split_packed(qkv, k);
    return flash_attention_v2_lse(s[0], s[1], s[2], options, mask);
  }
  p.q_row = p.kv_row = k.width();
  AttentionForward r;
  r.out = Tensor::empty(k.q, DType::F32, qkv.device());
  r.lse = Tensor::empty({p.batch, p.heads, p.seq_q}, DType::F32, qkv.device());
  const std::vector<Tensor> in = packed_views(qkv, k);
  webgpu::attention_forward(in[0], in[1], in[2], mask, p, r.out, r.lse);
  return r;
}

Tensor flash_attention_v2_packed_backward(const Tensor& qkv, int64_t num_heads, int64_t num_kv_heads,
                                          const Tensor& out, const Tensor& grad_out, const AttentionOptions& options,
                                          const Tensor* mask, const Tensor* lse) {
  const char* op = "flash_attention_v2_packed_backward";
  const Packed k = packed_operands(op, qkv, num_heads, num_kv_heads, mask);
  AttentionPlan p = plan_for(op, k.q, k.kv, qkv.device(), options, mask, packed_what(qkv, k));
  check_backward_operands(op, qkv, k.q, p, out, grad_out, lse);
  if (!reads_packed(qkv, k, p, true)) {
    const std::vector<Tensor> s = split_packed(qkv, k);
    const AttentionGrads g = flash_attention_v2_backward(s[0], s[1], s[2], out, grad_out, options, mask, lse);
    const int64_t B = qkv.dim(0), T = qkv.dim(1);
    return concat_columns({g.grad_q.reshape({B, T, k.widths()[0]}), g.grad_k.reshape({B, T, k.widths()[1]}),
                           g.grad_v.reshape({B, T, k.widths()[2]})});
  }
  Tensor lse_owned;
  if (!lse) {
    lse_owned = flash_attention_v2_packed_lse(qkv, num_heads, num_kv_heads, options, mask).lse;
    lse = &lse_owned;
  }
  p.q_row = p.kv_row = k.width();
  // Every column of every token is written: q's gradient, then k's and v's.
  Tensor grad = Tensor::empty(qkv.shape(), DType::F32, qkv.device());
  const std::vector<Tensor> in = packed_views(qkv, k);
  std::vector<Tensor> g = packed_views(grad, k);
  webgpu::attention_backward(in[0], in[1], in[2], mask, out, grad_out, *lse, p, g[0], g[1], g[2]);
  return grad;
}

}  // namespace forge
