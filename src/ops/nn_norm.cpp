// layernorm, layernorm_bwd: validation and dispatch.
#include "cpu/nn_kernels.h"
#include "ops/check.h"
#include "webgpu/nn_kernels.h"

namespace forge {

namespace {

// t must be f32 [n]: "[layernorm] gamma must be [768], got f32[767] on cpu".
void check_vector(const char* op, const char* name, const Tensor& t, int64_t n) {
  check::dtype(op, name, t, DType::F32);
  if (t.shape() != Shape{n})
    throw ShapeError(std::string("[") + op + "] " + name + " must be [" + std::to_string(n) + "], got " +
                     t.describe());
}

void check_rows(const char* op, const char* name, const Tensor& t) {
  check::dtype(op, name, t, DType::F32);
  check::rank(op, name, t, 1, 8);
}

void check_eps(const char* op, float eps) {
  if (!(eps >= 0.0f))
    throw ValueError(std::string("[") + op + "] eps must be non-negative, got " + std::to_string(eps));
}

}  // namespace

Tensor layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  const char* op = "layernorm";
  check::same_device(op, {&x, &gamma, &beta});
  check_rows(op, "x", x);
  int64_t cols = x.dim(-1);
  check_vector(op, "gamma", gamma, cols);
  check_vector(op, "beta", beta, cols);
  check_eps(op, eps);
  int64_t rows = cols ? x.numel() / cols : 0;
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.device().is_cpu()) cpu::layernorm(x, gamma, beta, eps, rows, cols, y);
  else webgpu::layernorm(x, gamma, beta, eps, rows, cols, y);
  return y;
}

LayerNormGrads layernorm_bwd(const Tensor& x, const Tensor& gamma, const Tensor& dy, float eps,
                             const Tensor* dx_add) {
  const char* op = "layernorm_bwd";
  check::same_device(op, {&x, &gamma, &dy});
  check_rows(op, "x", x);
  check::f32_like(op, "dy", dy, x);
  if (dx_add) check::f32_like(op, "dx_add", *dx_add, x);
  int64_t cols = x.dim(-1);
  check_vector(op, "gamma", gamma, cols);
  check_eps(op, eps);
  int64_t rows = cols ? x.numel() / cols : 0;
  LayerNormGrads g;
  g.dx = Tensor::empty(x.shape(), DType::F32, x.device());
  g.dgamma = Tensor::zeros({cols}, DType::F32, x.device());
  g.dbeta = Tensor::zeros({cols}, DType::F32, x.device());
  if (rows == 0) return g;
  if (x.device().is_cpu()) {
    cpu::layernorm_bwd(x, gamma, dy, eps, rows, cols, g.dx, g.dgamma, g.dbeta);
    if (dx_add) g.dx = add(*dx_add, g.dx);
  } else {
    webgpu::layernorm_bwd(x, gamma, dy, eps, rows, cols, dx_add, g.dx, g.dgamma, g.dbeta);
  }
  return g;
}

}  // namespace forge
