// The LM head with cross-entropy over row blocks, and the chunked embedding
// gradient (see train_head.h). The [N, V] logits, probabilities and their
// gradient never exist for all N rows at once (GPT-2 124M at B8 x T1024 would
// need 1.6 GB for each), and no WebGPU binding exceeds the device limit.
#include "models/common/train_head.h"

#include <algorithm>

#include "gpu/runtime.h"

namespace forge::models {

namespace {

// Rows per LM-head block: the [rows, width] logits stay within 256 MiB on
// the CPU, and within one binding and 2 GiB on WebGPU; blocks other than the
// whole set are a multiple of 64 rows so their offsets meet WebGPU's
// alignment. Fewer, larger blocks give the table's gradient a deeper k and
// the input's gradient more tiles: on an H100, GPT-2's B8 x T1024 step
// (8192 rows of 50,260) in blocks of 1280 / 2560 / 4096 / all 8192 rows
// took 185.5, 184.0 / 184.7 / 181.6 / 181.4, 182.1 ms in one command
// (PyTorch, which holds every row's logits and their gradient, 178.2), its
// device peak 9.56 -> 11.04 GB.
int64_t head_block_rows(const Device& dev, int64_t rows, int64_t width, int64_t asked) {
  if (asked > 0) return asked >= rows ? rows : (asked + 63) / 64 * 64;
  uint64_t limit = uint64_t(256) << 20;
  if (dev.is_webgpu()) limit = std::min<uint64_t>(uint64_t(2) << 30, dev.runtime().binding_limit());
  const int64_t fit = int64_t(limit / (uint64_t(width) * 4));
  if (fit >= rows) return rows;
  return std::max<int64_t>(64, fit / 64 * 64);
}

}  // namespace

Tensor lm_head_nll(const std::vector<Tensor>& table, int64_t V, const Tensor& x_all,
                   const std::vector<int32_t>& targets, float grad_scale, std::vector<Tensor>* dtable, Tensor* dx_out,
                   int64_t head_rows, const std::string& who) {
  const Device& dev = x_all.device();
  const int64_t N = x_all.dim(0), C = x_all.dim(1);
  if (int64_t(targets.size()) != N)
    throw ShapeError(who + " " + std::to_string(targets.size()) + " targets for " + std::to_string(N) + " positions");
  std::vector<uint32_t> rows;
  std::vector<int32_t> tgt;
  for (int64_t i = 0; i < N; ++i) {
    const int32_t t = targets[size_t(i)];
    if (t < 0) continue;
    if (t >= V)
      throw ValueError(who + " target " + std::to_string(t) + " at position " + std::to_string(i) +
                       " is out of range for vocab size " + std::to_string(V));
    rows.push_back(uint32_t(i));
    tgt.push_back(t);
  }
  const int64_t R = int64_t(rows.size());
  if (R == 0) throw ValueError(who + " no position has a target");
  const bool all = R == N;
  Tensor row_ids = Tensor::from_vector(rows, {R});
  Tensor sel = all ? x_all : embedding(row_ids, x_all);  // [R, C]

  // The logits' rows padded to whole vec4s (pad_rows): the backward's
  // products then read their gradient as vec4s, where a row stride of an odd
  // vocabulary (GPT-2's 50,257) would leave them reading scalars.
  const int64_t pitch = padded_row_width(V);
  const int64_t blk = std::min(R, head_block_rows(dev, R, pitch, head_rows));
  Tensor loss, dsel;
  if (dx_out && blk < R) dsel = Tensor::zeros({R, C}, DType::F32, dev);
  if (dx_out && dtable) dtable->resize(table.size());
  for (int64_t r0 = 0; r0 < R; r0 += blk) {
    const int64_t r1 = std::min(R, r0 + blk), n = r1 - r0;
    Tensor x = blk < R ? sel.slice_rows(r0, r1) : sel;  // [n, C]
    Tensor t = Tensor::from_vector(std::vector<int32_t>(tgt.begin() + r0, tgt.begin() + r1), {n});
    // The logits become their gradient in place, beside the block's losses.
    Tensor dlogits = matmul_chunked_transb(x, table, 1.0f, nullptr, true);          // [n, pitch]
    Tensor s = sum_rows(cross_entropy_in_place(dlogits, t, grad_scale, V).reshape({n, 1}));  // [1]
    loss = loss.defined() ? add(loss, s) : s;
    if (!dx_out) continue;
    // The table's gradient straight into its slots: added into them once
    // they hold one (a later block or micro-batch), else written into the
    // slots' targets.
    std::vector<Tensor> into(table.size());
    const bool add_into =
        dtable && std::all_of(dtable->begin(), dtable->end(), [](const Tensor& g) { return g.defined(); });
    for (size_t c = 0; dtable && c < table.size(); ++c) {
      if (add_into) into[c] = (*dtable)[c];
      else if (const Tensor* t = (*dtable)[c].defined() ? nullptr : GradTargets::find((*dtable)[c])) into[c] = *t;
    }
    ChunkedTransbGrads hg = matmul_chunked_transb_backward(dlogits, x, table, 1.0f, &into, add_into);
    if (dtable && !add_into)
      for (size_t c = 0; c < table.size(); ++c) accumulate_grad((*dtable)[c], hg.dchunks[c]);  // [rows_c, C]
    if (blk < R) copy_tensor(hg.da, dsel, r0 * C);
    else dsel = hg.da;
  }
  if (dx_out) {
    if (all) {
      *dx_out = dsel;
    } else {
      *dx_out = Tensor::zeros({N, C}, DType::F32, dev);
      scatter_add_rows(*dx_out, row_ids, dsel);
    }
  }
  return loss;
}

void scatter_add_rows_chunked(std::vector<Tensor>& dst, int64_t chunk_rows, const Tensor& ids, const Tensor& src) {
  if (dst.size() == 1) {
    scatter_add_rows(dst[0], ids, src);
    return;
  }
  const int64_t C = src.dim(-1), n = ids.numel();
  const uint32_t* id = ids.data<uint32_t>();
  for (size_t c = 0; c < dst.size(); ++c) {
    const int64_t lo = int64_t(c) * chunk_rows, hi = lo + dst[c].dim(0);
    std::vector<uint32_t> rows, local;
    for (int64_t i = 0; i < n; ++i) {
      if (int64_t(id[i]) < lo || int64_t(id[i]) >= hi) continue;
      rows.push_back(uint32_t(i));
      local.push_back(uint32_t(id[i] - lo));
    }
    if (rows.empty()) continue;
    const int64_t r = int64_t(rows.size());
    Tensor picked = embedding(Tensor::from_vector(rows, {r}), src.reshape({n, C}));  // [r, C]
    scatter_add_rows(dst[c], Tensor::from_vector(local, {r}), picked);
  }
}

}  // namespace forge::models
