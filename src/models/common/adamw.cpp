// The learning-rate schedule and AdamW over named parameters (forge/train.h).
#include <cmath>
#include <numbers>

#include "forge/ops.h"
#include "forge/train.h"

namespace forge {

double LrSchedule::at(int64_t step) const {
  if (warmup > 0 && step < warmup) return lr * double(step + 1) / double(warmup);
  if (!cosine || total <= warmup) return lr;
  const double min_lr = lr * min_ratio;
  if (step >= total) return min_lr;
  const double progress = double(step - warmup) / double(total - warmup);
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

AdamW::AdamW(std::vector<NamedTensor> params, AdamWConfig config)
    : params_(std::move(params)), config_(std::move(config)) {
  for (const NamedTensor& p : params_) {
    if (p.value.dtype() != DType::F32)
      throw DTypeError("[adamw] parameter '" + p.name + "' must be f32, got " + p.value.describe());
    m_.push_back(Tensor::zeros(p.value.shape(), DType::F32, p.value.device()));
    v_.push_back(Tensor::zeros(p.value.shape(), DType::F32, p.value.device()));
  }
}

void AdamW::restore(int64_t steps, const std::vector<Tensor>& m, const std::vector<Tensor>& v) {
  if (m.size() != params_.size() || v.size() != params_.size())
    throw ShapeError("[adamw] " + std::to_string(m.size()) + " saved moments for " + std::to_string(params_.size()) +
                     " parameters");
  for (size_t i = 0; i < params_.size(); ++i)
    if (m[i].shape() != params_[i].value.shape() || v[i].shape() != params_[i].value.shape())
      throw ShapeError("[adamw] saved moments of '" + params_[i].name + "' are " + shape_str(m[i].shape()) +
                       ", the parameter is " + shape_str(params_[i].value.shape()));
  for (size_t i = 0; i < params_.size(); ++i) {
    m_[i] = m[i].to(params_[i].value.device());
    v_[i] = v[i].to(params_[i].value.device());
  }
  step_ = steps;
}

AdamW::Update AdamW::step(std::vector<Tensor>& grads) {
  if (grads.size() != params_.size())
    throw ValueError("[adamw] " + std::to_string(grads.size()) + " gradients for " + std::to_string(params_.size()) +
                     " parameters");
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined()) throw ValueError("[adamw] no gradient for '" + params_[i].name + "'");
  Update u;
  u.norm_sq = gradient_norm_squared(grads);  // [1], on the device
  if (config_.grad_clip > 0)
    for (Tensor& g : grads) clip_grad_by_norm(g, u.norm_sq, config_.grad_clip);
  u.lr = config_.schedule.at(step_);
  ++step_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& w = params_[i].value;
    const bool decay = !config_.decays || config_.decays(params_[i].name, w.shape());
    adamw(w, grads[i], m_[i], v_[i], u.lr, config_.beta1, config_.beta2, config_.eps,
          decay ? config_.weight_decay : 0.0, step_);
  }
  return u;
}

}  // namespace forge
