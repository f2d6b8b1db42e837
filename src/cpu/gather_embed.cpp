// CPU embedding gather over a (possibly row-chunked) table.
#include <cstring>

#include "cpu/gather_kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

void embedding(const Tensor& ids, const std::vector<Tensor>& chunks, const Tensor* wpe, const EmbedPlan& p,
               Tensor& out) {
  const auto* id = static_cast<const uint32_t*>(ids.raw_data());  // validated: i32 ids are non-negative
  const float* pos_table = wpe ? wpe->data<float>() : nullptr;    // [P, C]
  float* o = out.data<float>();                                    // [rows, C]
  const int64_t c = p.cols;
  parallel_for(p.rows, c, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t v = id[r];
      const float* row = chunks[size_t(v / p.chunk_rows)].data<float>() + (v % p.chunk_rows) * c;
      float* dst = o + r * c;
      if (pos_table) {
        const float* pe = pos_table + (p.pos + r % p.seq) * c;
        for (int64_t j = 0; j < c; ++j) dst[j] = row[j] + pe[j];
      } else if (c) {
        std::memcpy(dst, row, size_t(c) * sizeof(float));
      }
    }
  });
}

}  // namespace forge::cpu
