// WebGPU host side of the nn ops (forge/ops/nn.h): parameter blocks,
// bindings and grids for the WGSL kernels in shaders/. Inputs are validated
// by the op layer (src/ops/nn_*.cpp); `rows` x `cols` views flatten all
// leading dims into rows. Row-wise work is split with for_each_row_chunk so
// that no binding exceeds the device's storage binding limit.
#pragma once
#include <cstdint>
#include <vector>

#include "forge/ops/nn.h"
#include "ops/nn_plan.h"

namespace forge::webgpu {

void mul(const Tensor& a, const Tensor& b, Tensor& out);
void sub(const Tensor& a, const Tensor& b, Tensor& out);
void activation(Activation act, const Tensor& x, Tensor& y);
void activation_bwd(Activation act, const Tensor& x, const Tensor& dy, Tensor& dx);

void layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, int64_t rows, int64_t cols,
               Tensor& y);
// dx_add (or none): added into dx in the same pass.
void layernorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& dy, float eps, int64_t rows, int64_t cols,
                   const Tensor* dx_add, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

// x [rows, cols] -> out [cols]: blocks of rows reduced to partial sums, then
// the partials reduced per column (two passes, fixed order).
void sum_rows(const Tensor& x, int64_t rows, int64_t cols, Tensor& out);
// sum_rows of x and of y ([rows, cols] each) into out_x and out_y, in the same
// dispatches (a norm's two weight gradients).
void sum_rows_pair(const Tensor& x, const Tensor& y, int64_t rows, int64_t cols, Tensor& out_x, Tensor& out_y);
// Sum of squares of all of x into out [1], on the device.
void sumsq(const Tensor& x, Tensor& out);

void dropout(const Tensor& x, const DropoutPlan& plan, Tensor& y);
void adamw(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamWPlan& plan);
// adamw_flat (shaders/adamw_flat.wgsl): norm_sq undefined or max_norm 0:
// no clipping.
void adamw_flat(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const Tensor& segments,
                const AdamWPlan& plan, const Tensor& norm_sq, float max_norm);
// Sum of squares of all the tensors' elements into out [1]: one partial pass
// per tensor (per binding chunk) into shared partial sums, one final pass.
void sumsq_many(const std::vector<Tensor>& xs, Tensor& out);

}  // namespace forge::webgpu
