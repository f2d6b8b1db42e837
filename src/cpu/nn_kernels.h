// CPU kernels of the nn ops (forge/ops/nn.h): plain reference loops, with
// reductions accumulated in double. Inputs are validated by the op layer
// (src/ops/nn_*.cpp) before these run; `rows` x `cols` views flatten all
// leading dims into rows.
#pragma once
#include <cstdint>

#include "forge/ops/nn.h"
#include "ops/nn_plan.h"

namespace forge::cpu {

void mul(const Tensor& a, const Tensor& b, Tensor& out);
void sub(const Tensor& a, const Tensor& b, Tensor& out);
void activation(Activation act, const Tensor& x, Tensor& y);
void activation_bwd(Activation act, const Tensor& x, const Tensor& dy, Tensor& dx);

// x, y [rows, cols]; gamma, beta [cols].
void layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, int64_t rows, int64_t cols,
               Tensor& y);
// x, dy, dx [rows, cols]; gamma, dgamma, dbeta [cols].
void layernorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& dy, float eps, int64_t rows, int64_t cols,
                   Tensor& dx, Tensor& dgamma, Tensor& dbeta);

// x [rows, cols] -> out [cols].
void sum_rows(const Tensor& x, int64_t rows, int64_t cols, Tensor& out);
// Sum of squares of all of x, in double.
double sumsq(const Tensor& x);

void dropout(const Tensor& x, const DropoutPlan& plan, Tensor& y);
void adamw(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamWPlan& plan);
// adamw_flat (forge/ops/train.h): segments u32 [S, 3] checked by the op;
// grad scaled by clip (1: no clipping); `decay` of the plan where a segment
// decays, 1 elsewhere.
void adamw_flat(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const Tensor& segments,
                const AdamWPlan& plan, float clip);

}  // namespace forge::cpu
