// WebGPU host side of the gather family (forge/ops/gather.h): parameter
// blocks, bindings and grids for shaders/embedding.wgsl, row_loss.wgsl,
// scatter_add.wgsl and strided_copy.wgsl. Inputs are validated by the op
// layer; ids resident on the device may be out of range (see gather.h for
// what the kernels do then). Work that can grow with the vocabulary or the
// row count, and the operands of the strided copy and wpe, are split so that
// no binding exceeds the device's limit.
#pragma once
#include <cstdint>
#include <vector>

#include "forge/ops/gather.h"
#include "gpu/runtime.h"
#include "ops/gather_plan.h"
#include "ops/matmul_plan.h"
#include "webgpu/kernels.h"

namespace forge::webgpu {

// ids [rows] (u32 or i32); chunks: table rows, each chunk within the binding
// limit; wpe [P, cols] or nullptr; out [rows, cols].
void embedding(const Tensor& ids, const std::vector<Tensor>& chunks, const Tensor* wpe, const EmbedPlan& p,
               Tensor& out);
// a [m, k]; chunks[i] [n_i, k]; out [m, sum n_i]. `base` carries m, k, alpha;
// `fuse` (a row norm, where matvec_fusable) goes to every chunk's product.
void matmul_chunked_transb(const Tensor& a, const std::vector<Tensor>& chunks, const MatmulPlan& base,
                           Tensor& out, const MatvecFusion* fuse = nullptr);
// probs [rows, cols]; ids [rows]; out [rows].
void gather_nll(const Tensor& probs, const Tensor& ids, const RowsPlan& p, Tensor& out);
// probs [rows, cols]; ids [rows]; out [rows, cols].
void ce_bwd(const Tensor& probs, const Tensor& ids, float scale, const RowsPlan& p, Tensor& out);
// logits [rows, cols] (IN PLACE: the gradient); ids [rows]; loss [rows].
void cross_entropy_in_place(Tensor& logits, const Tensor& ids, float scale, const RowsPlan& p, Tensor& loss);
// dst [vocab, cols]; ids [rows]; src [rows, cols].
void scatter_add_rows(Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p);
// The same sums from ids grouped on the host (src within one binding).
void scatter_add_grouped(Tensor& dst, const RowGroups& groups, const Tensor& src, const RowsPlan& p);
// dst [vocab, cols]; ids [rows], distinct, each < vocab; src [rows, cols]:
// dst[ids[r]] = src[r]. `op` names the calling op in errors.
void scatter_set_rows(const char* op, Tensor& dst, const Tensor& ids, const Tensor& src, const RowsPlan& p);
// f32 strided copy (see CopyPlan); `op` names the calling op in errors.
// Operands over the binding limit are copied in boxes of the index space
// (runs over d0, else d1, else d2) whose source and destination ranges each
// fit one binding.
void strided_copy(const char* op, const Tensor& src, const CopyPlan& p, Tensor& dst);

// Bytes [begin, end) of the data of `t` (an f32 tensor), bound from the
// aligned offset at or below `begin`. Adding `shift` (mod 2^32, as WGSL u32
// arithmetic does) to an element index into `t` gives the index into the
// binding.
struct AlignedRange {
  gpu::Arg arg;
  uint32_t shift = 0;
};
AlignedRange aligned_range(const Tensor& t, uint64_t begin, uint64_t end);
// The bytes of the binding aligned_range(t, begin, ...) would start below
// `begin`: what it spans beyond the range asked for.
uint64_t alignment_slack(const Tensor& t, uint64_t begin);

}  // namespace forge::webgpu
