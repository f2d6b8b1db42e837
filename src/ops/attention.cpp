// flash attention: validation, the resolved plan (scale and dropout threshold
// in double on the host) and dispatch.
#include <cmath>
#include <vector>

#include "cpu/attention_kernels.h"
#include "forge/ops/attention.h"
#include "ops/check.h"
#include "webgpu/attention_kernels.h"

namespace forge {

namespace {

std::string shapes(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask) {
  std::string s = check::operands({{"q", &q}, {"k", &k}, {"v", &v}});
  if (mask) s += ", mask " + mask->describe();
  return s;
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
  AttentionPlan p;
  p.batch = q.dim(0), p.seq_q = q.dim(1), p.heads = q.dim(2), p.head_dim = q.dim(3);
  p.seq_k = k.dim(1), p.kv_heads = k.dim(2);
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
                     shapes(q, k, v, mask));
  if (!(o.dropout_p >= 0.0f && o.dropout_p < 1.0f))
    throw ValueError(std::string("[") + op + "] dropout_p must be in [0, 1), got " + std::to_string(o.dropout_p) +
                     " for " + shapes(q, k, v, mask));
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
  if (q.device().is_webgpu() && p.head_dim > webgpu::kAttentionMaxHeadDim)
    throw ShapeError(std::string("[") + op + "] head_dim " + std::to_string(p.head_dim) +
                     " exceeds the WebGPU kernels' limit of " + std::to_string(webgpu::kAttentionMaxHeadDim) + ": " +
                     shapes(q, k, v, mask));
  return p;
}

bool empty(const AttentionPlan& p) {
  return p.batch == 0 || p.seq_q == 0 || p.heads == 0 || p.head_dim == 0;
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
  check::same_device(op, {&q, &out, &grad_out});
  check::dtype(op, "out", out, DType::F32);
  check::dtype(op, "grad_out", grad_out, DType::F32);
  if (out.shape() != q.shape() || grad_out.shape() != q.shape())
    throw ShapeError(std::string("[") + op + "] out and grad_out must have q's shape: " +
                     check::operands({{"q", &q}, {"out", &out}, {"grad_out", &grad_out}}));
  Tensor lse_owned;
  if (lse) {
    check::same_device(op, {&q, lse});
    check::dtype(op, "lse", *lse, DType::F32);
    if (lse->shape() != Shape{p.batch, p.heads, p.seq_q})
      throw ShapeError(std::string("[") + op + "] lse must be [batch, num_heads, seq_q]: " +
                       check::operands({{"q", &q}, {"lse", lse}}));
  }
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

}  // namespace forge
