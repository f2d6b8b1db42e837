// rope, rope_backward, rms_norm, rms_norm_residual, rms_norm_bwd: validation,
// the rope cos/sin table (built on the host) and dispatch.
#include <cmath>
#include <vector>

#include "cpu/llama_kernels.h"
#include "ops/check.h"
#include "webgpu/llama_kernels.h"

namespace forge {

namespace {

RopePlan rope_plan(const char* op, const Tensor& x, int64_t head_dim, bool inverse) {
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
  p.tokens = p.hidden ? x.numel() / p.hidden : 0;
  return p;
}

void rope_run(const char* op, Tensor& x, const RopePlan& p, const Tensor& table) {
  if (p.tokens == 0 || p.seq == 0) return;
  check::same_device(op, {&x, &table});
  check::dtype(op, "table", table, DType::F32);
  if (table.rank() != 3 || table.dim(0) < p.seq || table.dim(1) != p.head_dim / 2 || table.dim(2) != 2)
    throw ShapeError(std::string("[") + op + "] table must be [>= " + std::to_string(p.seq) + ", " +
                     std::to_string(p.head_dim / 2) + ", 2] for x " + x.describe() + ", got " + table.describe());
  if (x.device().is_cpu()) cpu::rope(x, table, p);
  else webgpu::rope(x, table, p);
}

void rope_impl(const char* op, Tensor& x, int64_t head_dim, int64_t pos, double theta, bool inverse) {
  RopePlan p = rope_plan(op, x, head_dim, inverse);
  if (!(theta > 0)) throw ValueError(std::string("[") + op + "] theta must be positive, got " + std::to_string(theta));
  if (p.tokens == 0 || p.seq == 0) return;
  rope_run(op, x, p, rope_table(rope_inv_freq(head_dim, theta), pos, p.seq, x.device()));
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

std::vector<float> rope_inv_freq(int64_t head_dim, double theta) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    throw ValueError("[rope] head_dim must be positive and even, got " + std::to_string(head_dim));
  std::vector<float> inv_freq(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i) inv_freq[i] = float(std::pow(theta, -double(2 * i) / double(head_dim)));
  return inv_freq;
}

Tensor rope_table(const std::vector<float>& inv_freq, int64_t pos, int64_t seq, const Device& device) {
  if (pos < 0) throw ValueError("[rope] pos must be >= 0, got " + std::to_string(pos));
  if (seq < 1) throw ValueError("[rope] seq must be >= 1, got " + std::to_string(seq));
  if (inv_freq.empty()) throw ValueError("[rope] no frequencies");
  // table [seq, half, 2]: (cos, sin) of f32(f32(pos + s) * inv_freq[i]).
  const int64_t half = int64_t(inv_freq.size());
  std::vector<float> cs(size_t(seq * half * 2));
  for (int64_t s = 0; s < seq; ++s) {
    float position = float(pos + s);
    for (int64_t i = 0; i < half; ++i) {
      float angle = position * inv_freq[size_t(i)];
      cs[(s * half + i) * 2] = float(std::cos(double(angle)));
      cs[(s * half + i) * 2 + 1] = float(std::sin(double(angle)));
    }
  }
  return Tensor::from_vector(cs, {seq, half, 2}, device);
}

void rope(Tensor& x, int64_t head_dim, const Tensor& table) {
  rope_run("rope", x, rope_plan("rope", x, head_dim, false), table);
}

void rope_backward(Tensor& dy, int64_t head_dim, const Tensor& table) {
  rope_run("rope_backward", dy, rope_plan("rope_backward", dy, head_dim, true), table);
}

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

RmsNormGrads rms_norm_bwd(const Tensor& x, const Tensor& weight, const Tensor& dy, float eps, const Tensor* dx_add) {
  const char* op = "rms_norm_bwd";
  check::same_device(op, {&x, &weight, &dy});
  RowsPlan p = rows_plan(op, x, eps);
  check::f32_like(op, "dy", dy, x);
  if (dx_add) check::f32_like(op, "dx_add", *dx_add, x);
  check_weight(op, weight, p.cols);
  RmsNormGrads g;
  g.dx = Tensor::empty(x.shape(), DType::F32, x.device());
  g.dweight = Tensor::zeros({p.cols}, DType::F32, x.device());
  if (p.rows == 0) return g;
  if (x.device().is_cpu()) {
    cpu::rms_norm_bwd(x, weight, dy, p, g.dx, g.dweight);
    if (dx_add) g.dx = add(*dx_add, g.dx);
  } else {
    webgpu::rms_norm_bwd(x, weight, dy, p, dx_add, g.dx, g.dweight);
  }
  return g;
}

}  // namespace forge
