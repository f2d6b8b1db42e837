// WebGPU host side of the Llama ops (forge/ops/llama.h): parameter blocks,
// bindings and grids for the WGSL kernels in shaders/. Same contracts as
// src/cpu/llama_kernels.h; row-wise work is split with for_each_row_chunk so
// that no binding exceeds the device's storage binding limit.
#pragma once
#include <cstdint>

#include "forge/ops/llama.h"
#include "ops/llama_plan.h"

namespace forge::webgpu {

void rope(Tensor& x, const Tensor& table, const RopePlan& plan);
// The fused rope_append in one dispatch; false (nothing recorded) when a
// binding would exceed the device's limit, for the caller to compose it.
// With rows_at (u32 [n], the rows form: q [n, 1, ..]) token i takes table row
// i and goes to cache row i at slot rows_at[i]; `at` is then unused.
bool rope_append(Tensor& q, Tensor& k, const Tensor& v, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                 int64_t at, const Tensor* rows_at = nullptr);
// rope_append of a joined q/k/v product qkv [B, T, (nh + 2 nkv) hd] in one
// dispatch: q [B, T, nh, hd] written rotated, k rotated and v into the
// caches at `at`; false as for rope_append.
bool rope_append_packed(const Tensor& qkv, Tensor& q, const Tensor& table, Tensor& k_cache, Tensor& v_cache,
                        int64_t at);
// qkv_append in one dispatch into q [B, T, nh, hd]; false as for rope_append;
// rows_at likewise (qkv [n, 1, 3C]).
bool qkv_append(const Tensor& qkv, Tensor& q, Tensor& k_cache, Tensor& v_cache, int64_t at,
                const Tensor* rows_at = nullptr);
void rms_norm(const Tensor& x, const Tensor* residual, const Tensor& weight, const RowsPlan& plan, Tensor& y,
              Tensor* sum);
// dx_add (or none): added into dx in the same pass.
void rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, const RowsPlan& plan,
                  const Tensor* dx_add, Tensor& dx, Tensor& dweight);
void silu_gate(const Tensor& up, const Tensor& gate, Tensor& out);
void silu_gate_bwd(const Tensor& up, const Tensor& gate, const Tensor& dy, Tensor& grad_up, Tensor& grad_gate);
void silu_gate_packed(const Tensor& gu, int64_t rows, int64_t n, Tensor& out);
void silu_gate_packed_bwd(const Tensor& gu, const Tensor& dy, int64_t rows, int64_t n, Tensor& dgu);
void top_k(const Tensor& x, int64_t rows, int64_t n, int64_t k, Tensor& out);
void conv1d_depthwise(const Tensor& x, const Tensor& w, const Tensor& b, const Conv1dPlan& plan, Tensor& out);

}  // namespace forge::webgpu
