// Host side of the embedding gather (shaders/embedding.wgsl) and of the LM
// head over a row-chunked table (the tiled matmul of shaders/matmul.wgsl,
// writing column blocks of the logits).
#include "forge_shaders.h"
#include "webgpu/gather_kernels.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kEmbedding{"embedding", shaders::embedding};

struct EmbeddingParams {
  uint32_t rows, cols, row_base, seq, pos, id_first, id_count, vocab, has_wpe, poison;
  uint32_t pad[2];
};
static_assert(sizeof(EmbeddingParams) == 48);

}  // namespace

void embedding(const Tensor& ids, const std::vector<Tensor>& chunks, const Tensor* wpe, const EmbedPlan& p,
               Tensor& out) {
  const Device& dev = out.device();
  const uint64_t row_bytes = uint64_t(p.cols) * 4;
  // Output rows in blocks within the binding limit; per block, one dispatch
  // per table chunk (each writes the rows whose ids it holds).
  for_each_row_chunk(dev.runtime(), "embedding", p.rows, row_bytes, [&](int64_t first, int64_t count) {
    for (size_t i = 0; i < chunks.size(); ++i) {
      EmbeddingParams q{uint32_t(count),
                        uint32_t(p.cols),
                        uint32_t(first),
                        uint32_t(p.seq),
                        uint32_t(p.pos),
                        uint32_t(int64_t(i) * p.chunk_rows),
                        uint32_t(chunks[i].dim(0)),
                        uint32_t(p.vocab),
                        wpe ? 1u : 0u,
                        i + 1 == chunks.size() ? 1u : 0u,
                        {}};
      launch(dev, "embedding", kEmbedding, q,
             {arg(ids), arg(chunks[i]), wpe ? arg(*wpe) : arg(chunks[i]),
              arg(out, uint64_t(first) * row_bytes, uint64_t(count) * row_bytes)},
             grid_1d((uint64_t(count) * uint64_t(p.cols) + 255) / 256, dev.runtime().limits()));
    }
  });
}

void matmul_chunked_transb(const Tensor& a, const std::vector<Tensor>& chunks, const MatmulPlan& base,
                           Tensor& out) {
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
                         matmul(a, w, nullptr, p, block);
                         col += p.n;
                       }
                     });
}

}  // namespace forge::webgpu
