// gather_nll, ce_bwd, scatter_add_rows: validation and dispatch.
#include "cpu/gather_kernels.h"
#include "ops/check.h"
#include "ops/gather_ids.h"
#include "webgpu/gather_kernels.h"

namespace forge {

namespace {

// probs [R, V] or [B, T, V] with ids of shape probs[:-1]; returns the plan.
RowsPlan check_probs_ids(const char* op, const Tensor& probs, const Tensor& ids) {
  check::same_device(op, {&probs});
  check::dtype(op, "probs", probs, DType::F32);
  check::rank(op, "probs", probs, 2, 3);
  gather::check_ids_dtype(op, ids);
  if (ids.shape() != gather::leading_shape(probs))
    throw ShapeError(std::string("[") + op + "] ids " + shape_str(ids.shape()) + " must be " +
                     shape_str(gather::leading_shape(probs)) + " for probs " + shape_str(probs.shape()));
  RowsPlan p;
  p.cols = probs.dim(-1);
  p.rows = ids.numel();
  p.vocab = p.cols;
  return p;
}

}  // namespace

Tensor gather_nll(const Tensor& probs, const Tensor& ids) {
  const char* op = "gather_nll";
  RowsPlan p = check_probs_ids(op, probs, ids);
  Tensor dev_ids = gather::ids_for(op, ids, p.vocab, probs.device());
  Tensor out = Tensor::empty(ids.shape(), DType::F32, probs.device());
  if (probs.device().is_cpu()) cpu::gather_nll(probs, dev_ids, p, out);
  else webgpu::gather_nll(probs, dev_ids, p, out);
  return out;
}

Tensor ce_bwd(const Tensor& probs, const Tensor& ids, float scale) {
  const char* op = "ce_bwd";
  RowsPlan p = check_probs_ids(op, probs, ids);
  Tensor dev_ids = gather::ids_for(op, ids, p.vocab, probs.device());
  Tensor out = Tensor::empty(probs.shape(), DType::F32, probs.device());
  if (probs.device().is_cpu()) cpu::ce_bwd(probs, dev_ids, scale, p, out);
  else webgpu::ce_bwd(probs, dev_ids, scale, p, out);
  return out;
}

void scatter_add_rows(Tensor& dst, const Tensor& ids, const Tensor& src) {
  const char* op = "scatter_add_rows";
  check::same_device(op, {&dst, &src});
  check::dtype(op, "dst", dst, DType::F32);
  check::dtype(op, "src", src, DType::F32);
  check::rank(op, "dst", dst, 2, 2);
  check::rank(op, "src", src, 2, 3);
  gather::check_ids_dtype(op, ids);
  if (src.dim(-1) != dst.dim(1) || ids.shape() != gather::leading_shape(src))
    throw ShapeError("[scatter_add_rows] want dst [V, C], ids [R] and src [R, C] (or ids [B, T], src [B, T, C]), got "
                     "dst " + shape_str(dst.shape()) + ", ids " + shape_str(ids.shape()) + ", src " +
                     shape_str(src.shape()));
  RowsPlan p;
  p.rows = ids.numel();
  p.cols = dst.dim(1);
  p.vocab = dst.dim(0);
  Tensor dev_ids = gather::ids_for(op, ids, p.vocab, dst.device());
  if (dst.device().is_cpu()) {
    cpu::scatter_add_rows(dst, dev_ids, src, p);
    return;
  }
  if (&dst.buffer() == &src.buffer() || &dst.buffer() == &dev_ids.buffer())
    throw DeviceError("[scatter_add_rows] dst " + dst.describe() + " shares its storage with src or ids");
  webgpu::scatter_add_rows(dst, dev_ids, src, p);
}

}  // namespace forge
