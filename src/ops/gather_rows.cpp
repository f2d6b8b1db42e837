// gather_nll, ce_bwd, cross_entropy_in_place, scatter_add_rows: validation
// and dispatch.
#include <algorithm>
#include <numeric>

#include "cpu/gather_kernels.h"
#include "ops/check.h"
#include "ops/gather_ids.h"
#include "webgpu/gather_kernels.h"

namespace forge {

namespace {

// probs [R, V] or [B, T, V] with ids of shape probs[:-1]; returns the plan.
RowsPlan check_probs_ids(const char* op, const Tensor& probs, const Tensor& ids, const char* name = "probs") {
  check::same_device(op, {&probs});
  check::dtype(op, name, probs, DType::F32);
  check::rank(op, name, probs, 2, 3);
  gather::check_ids_dtype(op, ids);
  if (ids.shape() != gather::leading_shape(probs))
    throw ShapeError(std::string("[") + op + "] ids " + shape_str(ids.shape()) + " must be " +
                     shape_str(gather::leading_shape(probs)) + " for " + name + " " + shape_str(probs.shape()));
  RowsPlan p;
  p.cols = probs.dim(-1);
  p.rows = ids.numel();
  p.vocab = p.cols;
  p.pitch = p.cols;
  return p;
}

// ids (on the CPU, range checked) grouped by value: each distinct id with
// the rows that hold it, ascending.
RowGroups group_rows(const Tensor& ids) {
  const int64_t n = ids.numel();
  std::vector<uint32_t> id(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) id[size_t(r)] = uint32_t(gather::id_at(ids, r));
  RowGroups g;
  g.rows.resize(size_t(n));
  std::iota(g.rows.begin(), g.rows.end(), 0u);
  std::stable_sort(g.rows.begin(), g.rows.end(), [&](uint32_t a, uint32_t b) { return id[a] < id[b]; });
  for (size_t j = 0; j < g.rows.size(); ++j) {
    const uint32_t v = id[g.rows[j]];
    if (g.ids.empty() || g.ids.back() != v) {
      g.ids.push_back(v);
      g.offsets.push_back(uint32_t(j));
    }
  }
  g.offsets.push_back(uint32_t(n));
  return g;
}

}  // namespace

std::vector<uint32_t> RowGroups::packed() const {
  std::vector<uint32_t> out(offsets);
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), rows.begin(), rows.end());
  return out;
}

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

Tensor cross_entropy_in_place(Tensor& logits, const Tensor& ids, float scale, int64_t cols) {
  const char* op = "cross_entropy_in_place";
  RowsPlan p = check_probs_ids(op, logits, ids, "logits");
  if (cols < 0 || cols > p.cols)
    throw ShapeError("[cross_entropy_in_place] cols " + std::to_string(cols) + " is outside the logits' rows of " +
                     std::to_string(p.cols));
  if (cols > 0) p.cols = p.vocab = cols;
  Tensor dev_ids = gather::ids_for(op, ids, p.vocab, logits.device());
  if (!ids.device().is_cpu() && &ids.buffer() == &logits.buffer())
    throw DeviceError("[cross_entropy_in_place] ids " + ids.describe() + " share their storage with the logits");
  Tensor loss = Tensor::empty(ids.shape(), DType::F32, logits.device());
  if (p.rows == 0) return loss;
  if (logits.device().is_cpu()) cpu::cross_entropy_in_place(logits, dev_ids, scale, p, loss);
  else webgpu::cross_entropy_in_place(logits, dev_ids, scale, p, loss);
  return loss;
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
  // Ids on the host (training's token ids) are range checked there; on
  // WebGPU they are then grouped there, so that each destination element
  // reads only its own source rows, or uploaded where src exceeds a binding.
  const bool host_ids = ids.device().is_cpu();
  const Tensor checked = gather::ids_for(op, ids, p.vocab, host_ids ? Device::cpu() : dst.device());
  if (dst.device().is_cpu()) {
    cpu::scatter_add_rows(dst, checked, src, p);
    return;
  }
  if (&dst.buffer() == &src.buffer() || (!host_ids && &dst.buffer() == &ids.buffer()))
    throw DeviceError("[scatter_add_rows] dst " + dst.describe() + " shares its storage with src or ids");
  if (host_ids && src.nbytes() <= dst.device().runtime().binding_limit())
    webgpu::scatter_add_grouped(dst, group_rows(ids), src, p);
  else
    webgpu::scatter_add_rows(dst, host_ids ? ids.to(dst.device()) : checked, src, p);
}

}  // namespace forge
