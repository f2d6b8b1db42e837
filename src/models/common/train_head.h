// Pieces of the training backward shared by every family: the LM head with
// cross-entropy over row blocks (a row-chunked output table, tied or not) and
// the embedding gradient into a row-chunked table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "forge/ops.h"
#include "models/common/grad_targets.h"

namespace forge::models {

// The LM head and cross-entropy over the rows of x [N, C] that have a target
// (targets [N], -1: none) against the output table given as row chunks of
// [V, C]. Returns the NLL sum [1] on the device. With `dx`, also returns the
// gradient of grad_scale * NLL sum w.r.t. x [N, C] through *dx, and with
// `dtable` adds that of the table into *dtable (chunked as `table`,
// assigning undefined slots; nullptr: the table is frozen). The head runs over
// blocks of `head_rows` rows (rounded up to a multiple of 64; 0: as many as
// keep the [rows, V] logits within 256 MiB and one WebGPU binding). `who`
// prefixes messages ("[gpt2_train]").
Tensor lm_head_nll(const std::vector<Tensor>& table, int64_t vocab, const Tensor& x,
                   const std::vector<int32_t>& targets, float grad_scale, std::vector<Tensor>* dtable, Tensor* dx,
                   int64_t head_rows, const std::string& who);

// The embedding backward into a row-chunked table: dst[c] += the rows of
// src [N, C] whose id falls in chunk c (rows [c * chunk_rows, ...)), as
// scatter_add_rows does for a whole table. ids [B, T] u32 on the CPU.
void scatter_add_rows_chunked(std::vector<Tensor>& dst, int64_t chunk_rows, const Tensor& ids, const Tensor& src);

}  // namespace forge::models
