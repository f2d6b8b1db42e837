// embedding, embedding_chunked, split_rows_for_binding, matmul_chunked_transb:
// validation and dispatch.
#include "cpu/gather_kernels.h"
#include "cpu/kernels.h"
#include "forge/ops/train.h"
#include "ops/check.h"
#include "ops/gather_ids.h"
#include "ops/row_chunks.h"
#include "webgpu/gather_kernels.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"

namespace forge {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// Validates a row-chunked table and the optional positions; runs the gather.
Tensor embed(const char* op, const Tensor& ids, const std::vector<Tensor>& chunks, int64_t chunk_rows,
             const Tensor* wpe_arg, int64_t pos) {
  gather::check_ids_dtype(op, ids);
  check::rank(op, "ids", ids, 1, 2);
  if (chunks.empty()) throw ShapeError(std::string("[") + op + "] no table chunks");
  const Tensor* wpe = wpe_arg && wpe_arg->defined() ? wpe_arg : nullptr;
  const Tensor& first = chunks[0];
  check::same_device(op, {&first});
  check::rank(op, "table", first, 2, 2);
  const int64_t cols = first.dim(1);
  if (chunk_rows <= 0) throw ValueError(std::string("[") + op + "] chunk_rows must be positive, got " + S(chunk_rows));
  int64_t vocab = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Tensor& c = chunks[i];
    check::same_device(op, {&first, &c});
    check::dtype(op, "table", c, DType::F32);
    check::rank(op, "table", c, 2, 2);
    bool last = i + 1 == chunks.size();
    if (c.dim(1) != cols || (!last && c.dim(0) != chunk_rows) || (last && (c.dim(0) < 1 || c.dim(0) > chunk_rows)))
      throw ShapeError(std::string("[") + op + "] table chunk " + S(int64_t(i)) + " is " + shape_str(c.shape()) +
                       ", want [" + (last ? "1.." : "") + S(chunk_rows) + ", " + S(cols) + "] (chunk_rows " +
                       S(chunk_rows) + ", C " + S(cols) + ")");
    vocab += c.dim(0);
  }
  const int64_t seq = ids.dim(-1);
  if (pos < 0) throw ValueError(std::string("[") + op + "] pos must be non-negative, got " + S(pos));
  if (wpe) {
    check::same_device(op, {&first, wpe});
    check::dtype(op, "wpe", *wpe, DType::F32);
    check::rank(op, "wpe", *wpe, 2, 2);
    if (wpe->dim(1) != cols)
      throw ShapeError(std::string("[") + op + "] wpe " + shape_str(wpe->shape()) + " and table [" + S(vocab) +
                       ", " + S(cols) + "] differ in width");
    if (pos + seq > wpe->dim(0))
      throw ValueError(std::string("[") + op + "] positions " + S(pos) + ".." + S(pos + seq - 1) + " of ids " +
                       shape_str(ids.shape()) + " exceed the context length " + S(wpe->dim(0)) + " of wpe " +
                       shape_str(wpe->shape()));
  }
  const Device& dev = first.device();
  Tensor dev_ids = gather::ids_for(op, ids, vocab, dev);

  EmbedPlan p;
  p.rows = ids.numel();
  p.seq = std::max<int64_t>(1, seq);
  p.cols = cols;
  p.vocab = vocab;
  p.chunk_rows = chunk_rows;
  p.pos = pos;
  Shape out_shape = ids.shape();
  out_shape.push_back(cols);
  Tensor out = Tensor::empty(out_shape, DType::F32, dev);
  if (dev.is_cpu()) cpu::embedding(dev_ids, chunks, wpe, p, out);
  else webgpu::embedding(dev_ids, chunks, wpe, p, out);
  return out;
}

}  // namespace

Tensor embedding(const Tensor& ids, const Tensor& wte, const Tensor* wpe, int64_t pos) {
  const char* op = "embedding";
  check::same_device(op, {&wte});
  check::dtype(op, "wte", wte, DType::F32);
  check::rank(op, "wte", wte, 2, 2);
  if (wte.dim(0) == 0) throw ShapeError("[embedding] wte " + wte.describe() + " has no rows");
  // On WebGPU a table over the binding limit is gathered from aligned row
  // views of its one buffer.
  std::vector<Tensor> chunks =
      wte.device().is_cpu() ? std::vector<Tensor>{wte} : split_rows_for_binding(wte, wte.device());
  return embed(op, ids, chunks, chunks[0].dim(0), wpe, pos);
}

Tensor embedding_chunked(const Tensor& ids, const std::vector<Tensor>& chunks, int64_t chunk_rows,
                         const Tensor* wpe, int64_t pos) {
  return embed("embedding_chunked", ids, chunks, chunk_rows, wpe, pos);
}

std::vector<Tensor> split_rows_for_binding(const Tensor& table, const Device& device) {
  const char* op = "split_rows_for_binding";
  check::same_device(op, {&table});
  check::rank(op, "table", table, 2, 2);
  if (device.is_cpu() || table.dim(0) == 0) return {table};
  const gpu::Runtime& rt = device.runtime();
  const int64_t rows = table.dim(0);
  const uint64_t row_bytes = uint64_t(table.dim(1)) * dtype_size(table.dtype());
  std::vector<Tensor> chunks;
  if (table.device() == device) {
    // Views of one buffer: chunk starts must meet the offset alignment.
    webgpu::for_each_row_chunk(rt, op, rows, row_bytes,
                               [&](int64_t first, int64_t count) { chunks.push_back(table.slice_rows(first, first + count)); });
    return chunks;
  }
  // Chunks to be uploaded as buffers of their own: only the size matters.
  const int64_t per = rows_per_binding(rows, row_bytes, device);
  for (int64_t r = 0; r < rows; r += per) chunks.push_back(table.slice_rows(r, std::min(rows, r + per)));
  return chunks;
}

int64_t rows_per_binding(int64_t rows, uint64_t row_bytes, const Device& device) {
  if (device.is_cpu() || row_bytes == 0) return std::max<int64_t>(rows, 1);
  const uint64_t limit = device.runtime().binding_limit();
  const int64_t per = int64_t(limit / row_bytes);
  if (per == 0)
    throw DeviceError("[split_rows_for_binding] a row of " + S(int64_t(row_bytes)) +
                      " bytes exceeds the device's storage binding limit of " + S(int64_t(limit)) + " bytes");
  return per;
}

int64_t padded_row_width(int64_t n) { return (n + 3) / 4 * 4; }

namespace {

// Checks a [.., k] against chunks [n_i >= 1, k]; returns sum n_i.
int64_t check_chunked_transb(const char* op, const Tensor& a, const std::vector<Tensor>& chunks) {
  check::same_device(op, {&a});
  check::dtype(op, "a", a, DType::F32);
  check::rank(op, "a", a, 1, 8);
  if (chunks.empty()) throw ShapeError(std::string("[") + op + "] no weight chunks for a " + shape_str(a.shape()));
  const int64_t k = a.dim(-1);
  int64_t n_total = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const Tensor& w = chunks[i];
    check::same_device(op, {&a, &w});
    check::dtype(op, "chunk", w, DType::F32);
    if (w.rank() != 2 || w.dim(1) != k || w.dim(0) < 1)
      throw ShapeError(std::string("[") + op + "] chunk " + S(int64_t(i)) + " " + shape_str(w.shape()) +
                       " must be [n >= 1, " + S(k) + "] for a " + shape_str(a.shape()));
    n_total += w.dim(0);
  }
  return n_total;
}

}  // namespace

ChunkedTransbGrads matmul_chunked_transb_backward(const Tensor& dout, const Tensor& a,
                                                  const std::vector<Tensor>& chunks, float alpha,
                                                  const std::vector<Tensor>* dchunks_into, bool accumulate) {
  const char* op = "matmul_chunked_transb_backward";
  const int64_t n_total = check_chunked_transb(op, a, chunks);
  check::same_device(op, {&a, &dout});
  check::dtype(op, "dout", dout, DType::F32);
  const int64_t k = a.dim(-1), m = k ? a.numel() / k : numel(gather::leading_shape(a));
  Shape want = gather::leading_shape(a);
  want.push_back(n_total);
  Shape padded = want;  // pad_rows' rows, their padding ignored
  padded.back() = padded_row_width(n_total);
  if (dout.shape() != want && dout.shape() != padded)
    throw ShapeError("[matmul_chunked_transb_backward] dout " + dout.describe() + " must be " + shape_str(want) +
                     (padded != want ? " (or " + shape_str(padded) + ", rows padded to whole vec4s)" : "") +
                     " for a " + shape_str(a.shape()));
  if (dchunks_into && dchunks_into->size() != chunks.size())
    throw ShapeError("[matmul_chunked_transb_backward] " + S(int64_t(dchunks_into->size())) + " tensors to write " +
                     S(int64_t(chunks.size())) + " chunks' gradients into");
  ChunkedTransbGrads g;
  g.da = Tensor::zeros(a.shape(), DType::F32, a.device());
  if (m == 0 || k == 0) {
    for (const Tensor& w : chunks) g.dchunks.push_back(Tensor::zeros(w.shape(), DType::F32, w.device()));
    return g;
  }
  const int64_t ld = dout.dim(-1);  // n_total, or padded
  const Tensor a2 = a.reshape({m, k}), dout2 = dout.reshape({m, ld});
  Tensor da2 = g.da.reshape({m, k});
  int64_t col = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const Tensor& w = chunks[c];
    const int64_t n = w.dim(0);
    // dchunk [n, k] = alpha * (dout2 columns [col, col + n))^T @ a2.
    MatmulPlan pw;
    pw.m = n, pw.n = k, pw.k = m;
    pw.trans_a = true;
    pw.alpha = alpha;
    pw.lda = ld, pw.ldb = k, pw.a_offset = col;
    const Tensor* into = dchunks_into && (*dchunks_into)[c].defined() ? &(*dchunks_into)[c] : nullptr;
    if (into) check::output(op, *into, w.shape(), {&dout, &a, &w});
    Tensor dw = into ? *into : Tensor::empty(w.shape(), DType::F32, w.device());
    pw.accumulate = accumulate && into;
    run_matmul_plan(dout2, a2, nullptr, pw, dw);
    g.dchunks.push_back(dw);
    // da2 += alpha * (dout2 columns [col, col + n)) @ chunk [n, k].
    MatmulPlan pa;
    pa.m = m, pa.n = k, pa.k = n;
    pa.alpha = alpha;
    pa.lda = ld, pa.ldb = k, pa.a_offset = col;
    pa.accumulate = col != 0;
    run_matmul_plan(dout2, w, nullptr, pa, da2);
    col += n;
  }
  return g;
}

Tensor matmul_chunked_transb(const Tensor& a, const std::vector<Tensor>& chunks, float alpha, const RowNorm* norm,
                             bool pad_rows) {
  const char* op = "matmul_chunked_transb";
  const int64_t n_total = check_chunked_transb(op, a, chunks);
  if (norm) check::row_norm(op, a, *norm);
  const int64_t width = pad_rows ? padded_row_width(n_total) : n_total;
  const int64_t k = a.dim(-1);
  const int64_t m = k ? a.numel() / k : numel(gather::leading_shape(a));
  Shape out_shape = gather::leading_shape(a);
  out_shape.push_back(width);
  Tensor out = Tensor::empty(out_shape, DType::F32, a.device());
  Tensor a2 = a.reshape({m, k}), out2 = out.reshape({m, width});
  MatmulPlan base;
  base.m = m;
  base.k = k;
  base.trans_b = true;
  base.alpha = alpha;
  base.lda = k;
  base.ldb = k;
  if (m == 0) return out;
  // A row norm is fused where every chunk's product takes the WebGPU
  // matrix-vector kernels (few rows); elsewhere it runs first.
  const webgpu::MatvecFusion f = webgpu::matvec_fusion(norm);
  if (norm) {
    bool fused = a.device().is_webgpu();
    for (const Tensor& w : chunks) {
      MatmulPlan p = base;
      p.n = w.dim(0);
      fused = fused && webgpu::matvec_fusable(p, f, a.device().runtime().cpu_driver());
    }
    if (!fused) return matmul_chunked_transb(row_norm(a, *norm), chunks, alpha, nullptr, pad_rows);
  }
  if (width > n_total) {
    // The padding: zeros [m, width - n_total] after each row's n_total columns.
    CopyPlan z;
    z.dims[2] = m, z.dims[3] = width - n_total;
    z.dst_stride[2] = width, z.dst_offset = n_total;
    const Tensor zeros = Tensor::zeros({width - n_total}, DType::F32, a.device());
    if (a.device().is_cpu()) cpu::strided_copy(zeros, z, out2);
    else webgpu::strided_copy(op, zeros, z, out2);
  }
  if (a.device().is_cpu()) {
    int64_t col = 0;
    for (const Tensor& w : chunks) {
      MatmulPlan p = base;
      p.n = w.dim(0);
      p.ldc = width;
      p.c_offset = col;
      cpu::matmul(a2, w, nullptr, p, out2);
      col += p.n;
    }
  } else {
    webgpu::matmul_chunked_transb(a2, chunks, base, out2, norm ? &f : nullptr);
  }
  return out;
}

}  // namespace forge
