// rope, rope_backward, rms_norm, rms_norm_residual, rms_norm_bwd: validation,
// the rope cos/sin table (built on the host) and dispatch.
#include <cmath>
#include <vector>

#include "cpu/llama_kernels.h"
#include "ops/check.h"
#include "webgpu/llama_kernels.h"

namespace forge {

namespace {

void rope_impl(const char* op, Tensor& x, int64_t head_dim, int64_t pos, double theta, bool inverse) {
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  check::rank(op, "x", x, 1, 4);
  auto fail = [&](const std::string& what) {
    throw ShapeError(std::string("[") + op + "] " + what + " (x " + x.describe() + ", head_dim " +
                     std::to_string(head_dim) + ")");
  };
  RopePlan p;
  p.head_dim = head_dim;
  p.inverse = inverse;
  switch (x.rank()) {
    case 1: p.hidden = x.dim(0), p.seq = 1; break;
    case 2: p.hidden = x.dim(1), p.seq = x.dim(0); break;
    case 3: p.hidden = x.dim(2), p.seq = x.dim(1); break;
    default:
      if (x.dim(3) != head_dim) fail("the last dim of a rank-4 x must be head_dim");
      p.hidden = x.dim(2) * x.dim(3), p.seq = x.dim(1);
  }
  if (head_dim <= 0 || head_dim % 2 != 0) fail("head_dim must be positive and even");
  if (p.hidden % head_dim != 0) fail("head_dim must divide the hidden size " + std::to_string(p.hidden));
  if (pos < 0) throw ValueError(std::string("[") + op + "] pos must be >= 0, got " + std::to_string(pos));
  if (!(theta > 0)) throw ValueError(std::string("[") + op + "] theta must be positive, got " + std::to_string(theta));
  p.tokens = p.hidden ? x.numel() / p.hidden : 0;
  if (p.tokens == 0 || p.seq == 0) return;

  // table [seq, half, 2]: (cos, sin) of f32(f32(pos + s) * inv_freq[i]).
  int64_t half = head_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) inv_freq[i] = float(std::pow(theta, -double(2 * i) / double(head_dim)));
  std::vector<float> cs(size_t(p.seq * half * 2));
  for (int64_t s = 0; s < p.seq; ++s) {
    float position = float(pos + s);
    for (int64_t i = 0; i < half; ++i) {
      float angle = position * inv_freq[i];
      cs[(s * half + i) * 2] = float(std::cos(double(angle)));
      cs[(s * half + i) * 2 + 1] = float(std::sin(double(angle)));
    }
  }
  Tensor table = Tensor::from_vector(cs, {p.seq, half, 2}, x.device());
  if (x.device().is_cpu()) cpu::rope(x, table, p);
  else webgpu::rope(x, table, p);
}

void check_weight(const char* op, const Tensor& w, int64_t cols) {
  check::dtype(op, "weight", w, DType::F32);
  if (w.shape() != Shape{cols})
    throw ShapeError(std::string("[") + op + "] weight must be [" + std::to_string(cols) + "], got " + w.describe());
}

RowsPlan rows_plan(const char* op, const Tensor& x, float eps) {
  check::dtype(op, "x", x, DType::F32);
  check::rank(op, "x", x, 1, 8);
  if (!(eps >= 0.0f))
    throw ValueError(std::string("[") + op + "] eps must be non-negative, got " + std::to_string(eps));
  RowsPlan p;
  p.cols = x.dim(-1);
  p.rows = p.cols ? x.numel() / p.cols : 0;
  p.eps = eps;
  return p;
}

}  // namespace

void rope(Tensor& x, int64_t head_dim, int64_t pos, double theta) {
  rope_impl("rope", x, head_dim, pos, theta, false);
}

void rope_backward(Tensor& dy, int64_t head_dim, int64_t pos, double theta) {
  rope_impl("rope_backward", dy, head_dim, pos, theta, true);
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  const char* op = "rms_norm";
  check::same_device(op, {&x, &weight});
  RowsPlan p = rows_plan(op, x, eps);
  check_weight(op, weight, p.cols);
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  if (p.rows == 0) return y;
  if (x.device().is_cpu()) cpu::rms_norm(x, nullptr, weight, p, y, nullptr);
  else webgpu::rms_norm(x, nullptr, weight, p, y, nullptr);
  return y;
}

RmsNormResidual rms_norm_residual(const Tensor& x, const Tensor& residual, const Tensor& weight, float eps) {
  const char* op = "rms_norm_residual";
  check::same_device(op, {&x, &residual, &weight});
  RowsPlan p = rows_plan(op, x, eps);
  check::dtype(op, "residual", residual, DType::F32);
  if (residual.shape() != x.shape())
    throw ShapeError(std::string("[") + op + "] shapes differ: " +
                     check::operands({{"x", &x}, {"residual", &residual}}));
  check_weight(op, weight, p.cols);
  RmsNormResidual r;
  r.out = Tensor::empty(x.shape(), DType::F32, x.device());
  r.sum = Tensor::empty(x.shape(), DType::F32, x.device());
  if (p.rows == 0) return r;
  if (x.device().is_cpu()) cpu::rms_norm(x, &residual, weight, p, r.out, &r.sum);
  else webgpu::rms_norm(x, &residual, weight, p, r.out, &r.sum);
  return r;
}

RmsNormGrads rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, float eps) {
  const char* op = "rms_norm_bwd";
  check::same_device(op, {&x, &weight, &dy});
  RowsPlan p = rows_plan(op, x, eps);
  check::dtype(op, "dy", dy, DType::F32);
  if (dy.shape() != x.shape())
    throw ShapeError(std::string("[") + op + "] shapes differ: " + check::operands({{"x", &x}, {"dy", &dy}}));
  check_weight(op, weight, p.cols);
  RmsNormGrads g;
  g.dx = Tensor::empty(x.shape(), DType::F32, x.device());
  g.dweight = Tensor::zeros({p.cols}, DType::F32, x.device());
  if (p.rows == 0) return g;
  if (x.device().is_cpu()) cpu::rms_norm_bwd(x, weight, dy, p, g.dx, g.dweight);
  else webgpu::rms_norm_bwd(x, weight, dy, p, g.dx, g.dweight);
  return g;
}

}  // namespace forge
