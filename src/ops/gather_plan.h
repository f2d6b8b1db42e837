// The resolved geometry of the gather-family ops, computed once by the op
// layer (src/ops/gather_*.cpp) and shared by both backends.
#pragma once
#include <cstdint>
#include <vector>

namespace forge {

// embedding / embedding_chunked: out [rows, cols], row r at position
// pos + r % seq, token ids[r] looked up in a table of `vocab` rows stored as
// chunks of `chunk_rows` rows.
struct EmbedPlan {
  int64_t rows = 0;        // B * T
  int64_t seq = 1;         // T
  int64_t cols = 0;        // C
  int64_t vocab = 0;       // V
  int64_t chunk_rows = 0;  // rows per table chunk (all but the last)
  int64_t pos = 0;
};

// Row-wise ops over [rows, cols] with one id per row (gather_nll, ce_bwd,
// scatter_add_rows). vocab: the id bound (cols for the losses, dst rows for
// scatter_add_rows).
struct RowsPlan {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t vocab = 0;
  int64_t pitch = 0;  // elements from one row to the next: cols, or more for padded rows (cross_entropy_in_place)
};

// The source rows of a scatter grouped by destination row, built on the
// host from ids on the CPU: group u adds rows[offsets[u] .. offsets[u + 1])
// (ascending) into dst row ids[u]; ids ascend. packed() lays the three out
// as one u32 array: offsets [U + 1], ids [U], rows [R].
struct RowGroups {
  std::vector<uint32_t> offsets, ids, rows;
  std::vector<uint32_t> packed() const;
};

// A strided copy over a logical [d0, d1, d2, d3] index space, d3 contiguous
// in both tensors: dst[dst_offset + i0*dst_stride[0] + i1*dst_stride[1] +
// i2*dst_stride[2] + i3] = src[src_offset + i0*src_stride[0] + ...]. Every
// head reshape and the KV append is one of these.
struct CopyPlan {
  int64_t dims[4] = {1, 1, 1, 1};
  int64_t src_stride[3] = {0, 0, 0};
  int64_t dst_stride[3] = {0, 0, 0};
  int64_t src_offset = 0;  // elements
  int64_t dst_offset = 0;  // elements
  int64_t count() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

}  // namespace forge
