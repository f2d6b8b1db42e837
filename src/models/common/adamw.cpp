// The learning-rate schedule and AdamW over named parameters (forge/train.h).
#include <cmath>
#include <numbers>

#include "forge/ops.h"
#include "forge/train.h"
#include "models/common/flat_params.h"
#include "models/common/grad_targets.h"

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
  std::vector<bool> decay;
  for (const NamedTensor& p : params_)
    decay.push_back(!config_.decays || (p.value.defined() && config_.decays(p.name, p.value.shape())));
  flat_ = std::make_shared<FlatParams>(flatten_params(params_, decay, "[adamw]"));
  m_ = flat_->m;
  v_ = flat_->v;
}

size_t AdamW::pages() const { return flat_->pages.size(); }

const std::vector<Tensor>& AdamW::gradient_views() const { return flat_->g; }

void AdamW::restore(int64_t steps, const std::vector<Tensor>& m, const std::vector<Tensor>& v) {
  if (m.size() != params_.size() || v.size() != params_.size())
    throw ShapeError("[adamw] " + std::to_string(m.size()) + " saved moments for " + std::to_string(params_.size()) +
                     " parameters");
  for (size_t i = 0; i < params_.size(); ++i)
    if (m[i].shape() != params_[i].value.shape() || v[i].shape() != params_[i].value.shape())
      throw ShapeError("[adamw] saved moments of '" + params_[i].name + "' are " + shape_str(m[i].shape()) +
                       ", the parameter is " + shape_str(params_[i].value.shape()));
  for (size_t i = 0; i < params_.size(); ++i) {
    m_[i].copy_from(m[i]);  // into the flat moments
    v_[i].copy_from(v[i]);
  }
  step_ = steps;
}

AdamW::Update AdamW::step(std::vector<Tensor>& grads) {
  if (grads.size() != params_.size())
    throw ValueError("[adamw] " + std::to_string(grads.size()) + " gradients for " + std::to_string(params_.size()) +
                     " parameters");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) throw ValueError("[adamw] no gradient for '" + params_[i].name + "'");
    if (grads[i].shape() != params_[i].value.shape())
      throw ShapeError("[adamw] the gradient of '" + params_[i].name + "' is " + grads[i].describe() +
                       ", the parameter " + params_[i].value.describe());
  }
  if (params_.empty()) throw ValueError("[adamw] no parameters to update");
  // Into the flat gradients (device copies; a gradient already there stays).
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor& dst = flat_->g[i];
    if (models::same_place(grads[i], dst)) continue;
    dst.copy_from(grads[i]);
  }
  std::vector<Tensor> flat_g;
  for (const FlatPage& pg : flat_->pages) flat_g.push_back(pg.g);
  Update u;
  u.norm_sq = gradient_norm_squared(flat_g);  // [1], on the device; the gaps are zero
  u.lr = config_.schedule.at(step_);
  ++step_;
  AdamParams a;
  a.lr = u.lr;
  a.beta1 = config_.beta1;
  a.beta2 = config_.beta2;
  a.eps = config_.eps;
  a.weight_decay = config_.weight_decay;
  a.step = step_;
  for (FlatPage& pg : flat_->pages)  // the clip factor is read on the device
    adamw_flat(pg.w, pg.g, pg.m, pg.v, pg.segments, a, u.norm_sq, config_.grad_clip > 0 ? config_.grad_clip : 0.0f);
  return u;
}

}  // namespace forge
