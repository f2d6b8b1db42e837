// dropout and adamw: validation, the host-side scalars (in double) and
// dispatch.
#include <cmath>

#include "cpu/nn_kernels.h"
#include "ops/check.h"
#include "webgpu/nn_kernels.h"

namespace forge {

Tensor dropout(const Tensor& x, float p, uint64_t seed) {
  const char* op = "dropout";
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  if (!(p >= 0.0f && p < 1.0f))
    throw ValueError("[dropout] p must be in [0, 1), got " + std::to_string(p) + " for x " + x.describe());
  if (p == 0.0f) return x;
  DropoutPlan plan;
  double t = std::floor(double(p) * 4294967296.0);
  plan.threshold = uint32_t(std::min(t, 4294967295.0));
  plan.scale = float(1.0 / (1.0 - double(p)));
  plan.seed = seed;
  Tensor y = Tensor::empty(x.shape(), DType::F32, x.device());
  if (x.device().is_cpu()) cpu::dropout(x, plan, y);
  else webgpu::dropout(x, plan, y);
  return y;
}

void adamw(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, double lr, double beta1, double beta2,
           double eps, double weight_decay, int64_t step) {
  const char* op = "adamw";
  check::same_device(op, {&param, &grad, &m, &v});
  check::dtype(op, "param", param, DType::F32);
  check::dtype(op, "grad", grad, DType::F32);
  check::dtype(op, "m", m, DType::F32);
  check::dtype(op, "v", v, DType::F32);
  if (grad.shape() != param.shape() || m.shape() != param.shape() || v.shape() != param.shape())
    throw ShapeError("[adamw] shapes differ: " +
                     check::operands({{"param", &param}, {"grad", &grad}, {"m", &m}, {"v", &v}}));
  const AdamWPlan plan = adamw_plan(op, lr, beta1, beta2, eps, weight_decay, step, "param " + param.describe());
  if (param.numel() == 0) return;
  if (param.device().is_cpu()) cpu::adamw(param, grad, m, v, plan);
  else webgpu::adamw(param, grad, m, v, plan);
}

AdamWPlan adamw_plan(const char* op, double lr, double beta1, double beta2, double eps, double weight_decay,
                     int64_t step, const std::string& what) {
  auto bad = [&](const std::string& problem) {
    throw ValueError(std::string("[") + op + "] " + problem + " (" + what + ")");
  };
  if (step < 1) bad("step must be >= 1 (1-based), got " + std::to_string(step));
  if (!(beta1 >= 0 && beta1 < 1)) bad("beta1 must be in [0, 1), got " + std::to_string(beta1));
  if (!(beta2 >= 0 && beta2 < 1)) bad("beta2 must be in [0, 1), got " + std::to_string(beta2));
  if (!(lr >= 0)) bad("lr must be non-negative, got " + std::to_string(lr));
  if (!(eps >= 0)) bad("eps must be non-negative, got " + std::to_string(eps));
  if (!(weight_decay >= 0)) bad("weight_decay must be non-negative, got " + std::to_string(weight_decay));
  AdamWPlan plan;
  double bias_c1 = 1.0 - std::pow(beta1, double(step));
  double bias_c2 = 1.0 - std::pow(beta2, double(step));
  plan.decay = float(1.0 - lr * weight_decay);
  plan.beta1 = float(beta1);
  plan.one_minus_beta1 = float(1.0 - beta1);
  plan.beta2 = float(beta2);
  plan.one_minus_beta2 = float(1.0 - beta2);
  plan.step_size = float(lr / bias_c1);
  plan.sqrt_bias_c2 = float(std::sqrt(bias_c2));
  plan.eps = float(eps);
  return plan;
}

}  // namespace forge
