// matmul_transb_many and silu_gate_matmul: validation, and the fused WebGPU
// kernel for few rows (the row norm applied as x is read) or the plain ops:
// one product over weights that lie back to back in one storage (the models
// load a layer's q/k/v and gate/up so), split by columns (or, for the gate,
// read in place by silu_gate_packed), else one each.
#include "forge/ops.h"
#include "ops/check.h"
#include "webgpu/kernels.h"

namespace forge {

namespace {

// x [.., K] as [rows, K]; every weight [n_i, K].
void check_products(const char* op, const Tensor& x, const std::vector<const Tensor*>& ws) {
  for (const Tensor* w : ws) check::same_device(op, {&x, w});
  check::dtype(op, "x", x, DType::F32);
  if (x.rank() < 1) throw ShapeError(std::string("[") + op + "] x must have at least one dim, got " + x.describe());
  // All f32, or all bf16 (dense weights kept in 16 bits).
  const DType wt = ws.front()->dtype() == DType::BF16 ? DType::BF16 : DType::F32;
  for (const Tensor* w : ws) {
    check::dtype(op, "weight", *w, wt);
    if (w->rank() != 2 || w->dim(1) != x.dim(-1))
      throw ShapeError(std::string("[") + op + "] weight " + w->describe() + " must be [n, " +
                       std::to_string(x.dim(-1)) + "] for x " + x.describe());
  }
}

Tensor product(const Tensor& x, const Tensor& w) {
  MatmulOptions o;
  o.transpose_b = true;
  Shape shape = x.shape();
  shape.back() = w.dim(0);
  return matmul(x.reshape({x.numel() / x.dim(-1), x.dim(-1)}), w, o).reshape(shape);
}

// The kernel's form of a row norm (validated: f32 [K] on x's device).
webgpu::MatvecFusion fusion(const char* op, const Tensor& x, const RowNorm* norm) {
  if (!norm) return {};
  check::row_norm(op, x, *norm);
  return webgpu::matvec_fusion(norm);
}

// x @ w_i^T for each weight: one wider product when the weights are rows of
// one allocation (more workgroups for skinny k/v projections, one dispatch
// instead of several), its columns then split.
std::vector<Tensor> products(const Tensor& x, const std::vector<Tensor>& weights) {
  std::vector<Tensor> out;
  if (weights.size() > 1) {
    if (const Tensor joined = Tensor::joined_rows(weights); joined.defined()) {
      std::vector<int64_t> widths;
      for (const Tensor& w : weights) widths.push_back(w.dim(0));
      return split_columns(product(x, joined), widths);
    }
  }
  for (const Tensor& w : weights) out.push_back(product(x, w));
  return out;
}

Shape with_last(const Tensor& x, int64_t n) {
  Shape s = x.shape();
  s.back() = n;
  return s;
}

}  // namespace

std::vector<Tensor> matmul_transb_many(const Tensor& x, const std::vector<Tensor>& weights, const RowNorm* norm) {
  const char* op = "matmul_transb_many";
  if (weights.empty() || weights.size() > 3)
    throw ValueError(std::string("[") + op + "] takes one to three weights, got " + std::to_string(weights.size()));
  std::vector<const Tensor*> ws;
  for (const Tensor& w : weights) ws.push_back(&w);
  check_products(op, x, ws);
  const webgpu::MatvecFusion f = fusion(op, x, norm);
  if (x.device().is_webgpu() && weights.size() == 3) {
    std::vector<Tensor> out;
    for (const Tensor& w : weights) out.push_back(Tensor::empty(with_last(x, w.dim(0)), DType::F32, x.device()));
    if (webgpu::matvec_multi(x, {ws[0], ws[1], ws[2]}, /*silu_gate=*/false, {&out[0], &out[1], &out[2]}, &f))
      return out;
  }
  return products(norm ? row_norm(x, *norm) : x, weights);
}

Tensor silu_gate_matmul(const Tensor& x, const Tensor& gate, const Tensor& up, const RowNorm* norm) {
  const char* op = "silu_gate_matmul";
  check_products(op, x, {&gate, &up});
  if (gate.shape() != up.shape())
    throw ShapeError(std::string("[") + op + "] gate " + gate.describe() + " and up " + up.describe() +
                     " must have one shape");
  const webgpu::MatvecFusion f = fusion(op, x, norm);
  if (x.device().is_webgpu()) {
    // The kernel's unused outputs still need buffers of their own (writable
    // bindings may not alias).
    Tensor out = Tensor::empty(with_last(x, gate.dim(0)), DType::F32, x.device());
    Tensor unused1 = Tensor::empty({1}, DType::F32, x.device()), unused2 = Tensor::empty({1}, DType::F32, x.device());
    if (webgpu::matvec_multi(x, {&gate, &up, &up}, /*silu_gate=*/true, {&out, &unused1, &unused2}, &f)) return out;
  }
  const Tensor h = norm ? row_norm(x, *norm) : x;
  // Joined weights: one product whose halves the gate reads in place.
  if (const Tensor joined = Tensor::joined_rows({gate, up}); joined.defined()) return silu_gate_packed(product(h, joined));
  const std::vector<Tensor> gu = products(h, {gate, up});
  return silu_gate_fused(gu[0], gu[1]);
}

}  // namespace forge
