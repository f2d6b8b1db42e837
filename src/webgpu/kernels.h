// WebGPU host side of the ops: parameter blocks, bindings and grids for the
// WGSL kernels in shaders/. Inputs are validated by the op layer (src/ops/).
#pragma once
#include <array>
#include <string>
#include "forge/ops/core.h"
#include "ops/matmul_plan.h"

namespace forge::webgpu {

void add(const Tensor& a, const Tensor& b, Tensor& out);
void scale(const Tensor& x, float alpha, Tensor& out);
// b f32, or bf16 (read by the matrix-vector kernels as it is, widened first
// for the others).
// The decode-step fusions of the matrix-vector kernels: A's rows normed with
// `norm` [k] (and eps; RMSNorm, or LayerNorm with `layer` and an optional
// `norm_bias` [k]) as they are read, C = gelu(the product), and/or C =
// residual (C's shape) + the product.
struct MatvecFusion {
  const Tensor* norm = nullptr;
  float eps = 1e-5f;
  const Tensor* residual = nullptr;
  bool layer = false;
  const Tensor* norm_bias = nullptr;
  bool gelu = false;
  // main_kn's other store (matvec_kn_append.wgsl, matvec_qkv_append): a
  // packed q/k/v row's q to C, its k and v to bytes [slot, slot + C * 4) of
  // these caches.
  const Tensor* k_cache = nullptr;
  const Tensor* v_cache = nullptr;
  uint64_t slot = 0;
};
// The kernels' form of an op's (validated) row norm, residual and gelu.
MatvecFusion matvec_fusion(const RowNorm* norm, const Tensor* residual = nullptr, bool gelu = false);
// Whether matmul takes `f` for this plan (few rows, A not transposed, one
// batch element, k a multiple of 4 for a norm; no LayerNorm on a CPU
// driver, gpu::Runtime::cpu_driver); where not the caller composes the
// plain ops.
bool matvec_fusable(const MatmulPlan& plan, const MatvecFusion& f, bool cpu_driver);
// Whether the tiled kernel's epilogues take `f` for this plan (many rows: a
// gelu and a residual, no norm; one batch element, C dense, B aligned).
bool tile_fusable(const MatmulPlan& plan, const MatvecFusion& f);
// The tiles and k-slices the vec4 tiled kernel takes for a plan it runs
// (aligned operands, more rows than the matrix-vector kernels take), as
// "RxC", "RxC in S slices" and ", groups of G rows" where the tiles start
// in groups of rows (benchmarks and tests).
std::string matmul_tiling(const MatmulPlan& plan, const Device& dev);
// Whether matmul's tiles take plan.accumulate in their store (C += the
// product): a plan the tiled kernels run, C dense.
bool tiles_accumulate(const MatmulPlan& plan);
void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out,
            const MatvecFusion* fuse = nullptr);
// One token's packed q/k/v product in one dispatch (GPT-2's c_attn in a
// decode step of one sequence): x [1, k] @ w [k, 3C] (+ bias), x's row
// normed as it is read (fuse: a norm only), q [C] written to q, k and v to
// slot `at` of k_cache and v_cache [1, cap, C] (shapes validated by the
// op). False, with nothing recorded, where the kernel does not apply (bf16
// or short k, C not a multiple of 4, the slot not at a binding offset,
// fewer than 9 storage bindings a stage).
bool matvec_qkv_append(const Tensor& x, const Tensor& w, const Tensor* bias, const MatvecFusion* fuse, Tensor& q,
                       Tensor& k_cache, Tensor& v_cache, int64_t at);
// x bf16 [..] -> out f32 [..] (one shape).
void widen_bf16(const Tensor& x, Tensor& out);
// x [.., K] (at most 4 rows) against three weights [n_i, K] (all f32 or all
// bf16) in one dispatch:
// out[i] = x @ w[i]^T, or with silu_gate out[0] = silu(x @ w[0]^T) * (x @ w[1]^T)
// (w[2], out[1] and out[2] then bound but not used). False,
// with nothing recorded, where the kernel does not apply (more rows, K not
// a multiple of 4, unaligned offsets, a binding over the limit).
// With norm, x's rows RMS-normed with norm->norm [K] as they are read (a
// LayerNorm: false).
bool matvec_multi(const Tensor& x, std::array<const Tensor*, 3> w, bool silu_gate, std::array<Tensor*, 3> out,
                  const MatvecFusion* norm = nullptr);
void softmax(const Tensor& x, const SoftmaxPlan& plan, Tensor& out);
// y, dy, dx [plan.rows, plan.cols]; a causal plan's masked entries of dx are zero.
void softmax_bwd(const Tensor& y, const Tensor& dy, const SoftmaxPlan& plan, Tensor& dx);

}  // namespace forge::webgpu
