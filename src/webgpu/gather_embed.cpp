// Host side of the embedding gather (shaders/embedding.wgsl) and of the LM
// head over a row-chunked table (the tiled matmul of shaders/matmul.wgsl,
// writing column blocks of the logits).
#include <algorithm>
#include <string>

#include "forge/error.h"
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/gather_kernels.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kEmbedding{"embedding", {shaders::nan, shaders::embedding}};

struct EmbeddingParams {
  uint32_t rows, cols, row_base, seq, pos, id_first, id_count, vocab, has_wpe, poison, wpe_shift, out_shift;
};
static_assert(sizeof(EmbeddingParams) == 48);

// Output rows [first, first + count), one dispatch per table chunk. `wpe`
// and `out` are the bindings with their shifts (see embedding.wgsl).
void gather_rows(const Device& dev, const Tensor& ids, const std::vector<Tensor>& chunks, const EmbedPlan& p,
                 bool has_wpe, const AlignedRange& wpe, const AlignedRange& out, int64_t first, int64_t count) {
  for (size_t i = 0; i < chunks.size(); ++i) {
    EmbeddingParams q{uint32_t(count),
                      uint32_t(p.cols),
                      uint32_t(first),
                      uint32_t(p.seq),
                      uint32_t(p.pos),
                      uint32_t(int64_t(i) * p.chunk_rows),
                      uint32_t(chunks[i].dim(0)),
                      uint32_t(p.vocab),
                      has_wpe ? 1u : 0u,
                      i + 1 == chunks.size() ? 1u : 0u,
                      wpe.shift,
                      out.shift};
    launch(dev, "embedding", kEmbedding.kernel(), q, {arg(ids), arg(chunks[i]), has_wpe ? wpe.arg : arg(chunks[i]), out.arg},
           grid_1d((uint64_t(count) * uint64_t(p.cols) + 255) / 256, dev.runtime().limits()));
  }
}

// Rows of `t` (row_bytes each) from byte `begin` that fit one binding.
int64_t rows_fitting(const Tensor& t, uint64_t begin, uint64_t row_bytes, uint64_t limit) {
  const uint64_t slack = alignment_slack(t, begin);
  return slack + row_bytes > limit ? 0 : int64_t((limit - slack) / row_bytes);
}

}  // namespace

void embedding(const Tensor& ids, const std::vector<Tensor>& chunks, const Tensor* wpe, const EmbedPlan& p,
               Tensor& out) {
  const Device& dev = out.device();
  const uint64_t row_bytes = uint64_t(p.cols) * 4;
  const uint64_t limit = dev.runtime().binding_limit();
  // wpe: whole when it fits one binding, else the positions [pos, pos + seq)
  // when those fit.
  AlignedRange wpe_range;
  bool wpe_fits = true;
  if (wpe) {
    const uint64_t lo = uint64_t(p.pos) * row_bytes, hi = lo + uint64_t(p.seq) * row_bytes;
    if (wpe->nbytes() <= limit) wpe_range.arg = arg(*wpe);
    else if (alignment_slack(*wpe, lo) + (hi - lo) <= limit) wpe_range = aligned_range(*wpe, lo, hi);
    else wpe_fits = false;
  }
  if (wpe_fits) {
    // Output rows in blocks within the binding limit; per block, one
    // dispatch per table chunk (each writes the rows whose ids it holds).
    for_each_row_chunk(dev.runtime(), "embedding", p.rows, row_bytes, [&](int64_t first, int64_t count) {
      AlignedRange o;
      o.arg = arg(out, uint64_t(first) * row_bytes, uint64_t(count) * row_bytes);
      gather_rows(dev, ids, chunks, p, wpe != nullptr, wpe_range, o, first, count);
    });
    return;
  }
  // The positions used by one sequence do not fit a binding: output rows in
  // runs within one sequence whose output and wpe ranges each fit.
  for (int64_t g = 0; g < p.rows;) {
    const int64_t s = g % p.seq;
    const uint64_t out_begin = uint64_t(g) * row_bytes, wpe_begin = uint64_t(p.pos + s) * row_bytes;
    const int64_t count = std::min({p.rows - g, p.seq - s, rows_fitting(out, out_begin, row_bytes, limit),
                                    rows_fitting(*wpe, wpe_begin, row_bytes, limit)});
    if (count <= 0)
      throw DeviceError("[embedding] a row of " + std::to_string(row_bytes) +
                        " bytes cannot be split to fit the device's storage binding limit of " +
                        std::to_string(limit) + " bytes");
    const uint64_t bytes = uint64_t(count) * row_bytes;
    AlignedRange o = aligned_range(out, out_begin, out_begin + bytes);
    o.shift += uint32_t(uint64_t(g) * uint64_t(p.cols));  // indices into the run start at row g
    gather_rows(dev, ids, chunks, p, true, aligned_range(*wpe, wpe_begin, wpe_begin + bytes), o, g, count);
    g += count;
  }
}

void matmul_chunked_transb(const Tensor& a, const std::vector<Tensor>& chunks, const MatmulPlan& base,
                           Tensor& out, const MatvecFusion* fuse) {
  const int64_t n_total = out.dim(1);
  const uint64_t row_bytes = uint64_t(n_total) * 4;
  // Row blocks of the logits within the binding limit; per block, one matmul
  // per chunk writing its column block (row stride n_total).
  for_each_row_chunk(out.device().runtime(), "matmul_chunked_transb", base.m, row_bytes,
                     [&](int64_t first, int64_t count) {
                       Tensor block = out.slice_rows(first, first + count);  // aligned by for_each_row_chunk
                       int64_t col = 0;
                       for (const Tensor& w : chunks) {
                         MatmulPlan p = base;
                         p.m = count;
                         p.n = w.dim(0);
                         p.ldc = n_total;
                         p.c_offset = col;
                         p.a_offset = first * base.lda;
                         matmul(a, w, nullptr, p, block, fuse);
                         col += p.n;
                       }
                     });
}

}  // namespace forge::webgpu
