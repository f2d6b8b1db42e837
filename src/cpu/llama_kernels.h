// CPU kernels of the Llama ops (forge/ops/llama.h): plain reference loops,
// reductions in double. Inputs are validated by the op layer
// (src/ops/llama_*.cpp) before these run.
#pragma once
#include <cstdint>

#include "forge/ops/llama.h"
#include "ops/llama_plan.h"

namespace forge::cpu {

// x [tokens, hidden] in place; table [seq, head_dim / 2, 2] holds (cos, sin).
void rope(Tensor& x, const Tensor& table, const RopePlan& plan);
// x, y [rows, cols]; weight [cols]. With residual (non-null, [rows, cols]),
// sum = x + residual is written and normalised instead of x.
void rms_norm(const Tensor& x, const Tensor* residual, const Tensor& weight, const RowsPlan& plan, Tensor& y,
              Tensor* sum);
// x, dy, dx [rows, cols]; weight, dweight [cols].
void rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, const RowsPlan& plan, Tensor& dx,
                  Tensor& dweight);
void silu_gate(const Tensor& up, const Tensor& gate, Tensor& out);
void silu_gate_bwd(const Tensor& up, const Tensor& gate, const Tensor& dy, Tensor& grad_up, Tensor& grad_gate);
// gu [rows, 2n] = [up | gate] -> out [rows, n]; the backward writes dgu
// [rows, 2n] in gu's layout from dy [rows, n].
void silu_gate_packed(const Tensor& gu, int64_t rows, int64_t n, Tensor& out);
void silu_gate_packed_bwd(const Tensor& gu, const Tensor& dy, int64_t rows, int64_t n, Tensor& dgu);
// x [rows, n] -> out u32 [rows, k].
void top_k(const Tensor& x, int64_t rows, int64_t n, int64_t k, Tensor& out);
// x, out [rows, seq]; w [dim, 3]; b [dim].
void conv1d_depthwise(const Tensor& x, const Tensor& w, const Tensor& b, const Conv1dPlan& plan, Tensor& out);

}  // namespace forge::cpu
