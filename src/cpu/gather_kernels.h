// CPU kernels of the gather family (forge/ops/gather.h): plain loops. Inputs
// are validated by the op layer (src/ops/gather_*.cpp), ids included: every
// id these kernels see is within range.
#pragma once
#include <vector>

#include "forge/ops/gather.h"
#include "ops/gather_plan.h"

namespace forge::cpu {

// ids [rows] (u32 or i32); chunks as in embedding_chunked; wpe [P, cols] or
// nullptr; out [rows, cols].
void embedding(const Tensor& ids, const std::vector<Tensor>& chunks, const Tensor* wpe, const EmbedPlan& p,
               Tensor& out);
// probs [rows, cols]; ids [rows]; out [rows].
void gather_nll(const Tensor& probs, const Tensor& ids, const RowsPlan& p, Tensor& out);
// probs [rows, cols]; ids [rows]; out [rows, cols].
void ce_bwd(const Tensor& probs, const Tensor& ids, float scale, const RowsPlan& p, Tensor& out);
// logits [rows, cols] (IN PLACE: the gradient); ids [rows]; loss [rows].
// Implemented beside the softmax (src/cpu/softmax.cpp), whose steps it repeats.
void cross_entropy_in_place(Tensor& logits, const Tensor& ids, float scale, const RowsPlan& p, Tensor& loss);
// dst [vocab, cols]; ids [rows]; src [rows, cols].
void scatter_add_rows(Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p);
// f32 strided copy (see CopyPlan).
void strided_copy(const Tensor& src, const CopyPlan& p, Tensor& dst);

}  // namespace forge::cpu
