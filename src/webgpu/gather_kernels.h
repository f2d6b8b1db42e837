// WebGPU host side of the gather family (forge/ops/gather.h): parameter
// blocks, bindings and grids for shaders/embedding.wgsl, row_loss.wgsl,
// scatter_add.wgsl and strided_copy.wgsl. Inputs are validated by the op
// layer; ids resident on the device may be out of range (see gather.h for
// what the kernels do then). Work that can grow with the vocabulary or the
// row count is split so that no binding exceeds the device's limit.
#pragma once
#include <vector>

#include "forge/ops/gather.h"
#include "ops/gather_plan.h"
#include "ops/matmul_plan.h"

namespace forge::webgpu {

// ids [rows] (u32 or i32); chunks: table rows, each chunk within the binding
// limit; wpe [P, cols] or nullptr; out [rows, cols].
void embedding(const Tensor& ids, const std::vector<Tensor>& chunks, const Tensor* wpe, const EmbedPlan& p,
               Tensor& out);
// a [m, k]; chunks[i] [n_i, k]; out [m, sum n_i]. `base` carries m, k, alpha.
void matmul_chunked_transb(const Tensor& a, const std::vector<Tensor>& chunks, const MatmulPlan& base,
                           Tensor& out);
// probs [rows, cols]; ids [rows]; out [rows].
void gather_nll(const Tensor& probs, const Tensor& ids, const RowsPlan& p, Tensor& out);
// probs [rows, cols]; ids [rows]; out [rows, cols].
void ce_bwd(const Tensor& probs, const Tensor& ids, float scale, const RowsPlan& p, Tensor& out);
// dst [vocab, cols]; ids [rows]; src [rows, cols].
void scatter_add_rows(Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p);
// f32 strided copy (see CopyPlan); `op` names the calling op in errors.
void strided_copy(const char* op, const Tensor& src, const CopyPlan& p, Tensor& dst);

}  // namespace forge::webgpu
