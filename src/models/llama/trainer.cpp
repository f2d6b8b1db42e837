// LlamaTrainer: gradient accumulation over micro-batches, then one AdamW
// update (forge/train.h) of every parameter by Hugging Face name.
#include <algorithm>
#include <cmath>
#include <memory>

#include "forge/ops.h"
#include "forge/train.h"
#include "models/llama/train.h"

namespace forge {

using models::LlamaModel;
using models::LlamaParams;

struct LlamaTrainer::Impl {
  const LlamaModel& model;
  TrainConfig config;
  bool lora;  // an adapter is attached: it alone trains
  AdamW opt;

  static std::vector<NamedTensor> params_of(const LlamaModel& m) {
    std::vector<NamedTensor> out;
    if (m.adapter()) {
      std::vector<models::LlamaLayer> layers = m.layers();  // handles sharing the model's storage
      for (auto& [name, t] : models::llama_lora_named(layers)) out.push_back({name, *t});
      return out;
    }
    LlamaParams p = models::llama_params(m);
    for (auto& [name, t] : models::llama_named(p, m.config(), m.tied())) out.push_back({name, *t});
    return out;
  }
  Impl(const LlamaModel& m, TrainConfig c)
      : model(m), config(c), lora(m.adapter().has_value()), opt(params_of(m), c.optimizer) {}
};

namespace {

const LlamaModel& as_llama(const CausalLM& model) {
  const auto* m = dynamic_cast<const LlamaModel*>(&model);
  if (!m)
    throw ValueError("[llama_train] the model is a " + model.info().family +
                     " model; LlamaTrainer trains the Llama family (llama, qwen2, mistral)");
  return *m;
}

}  // namespace

LlamaTrainer::LlamaTrainer(CausalLM& model, TrainConfig config)
    : impl_(std::make_unique<Impl>(as_llama(model), std::move(config))) {}
LlamaTrainer::~LlamaTrainer() = default;

int64_t LlamaTrainer::steps_done() const { return impl_->opt.steps_done(); }

TrainStepResult LlamaTrainer::step(const std::vector<TrainBatch>& micro) {
  const LlamaModel& model = impl_->model;
  if (micro.empty()) throw ValueError("[llama_train] a step needs at least one micro-batch");
  int64_t targets = 0;
  for (const auto& mb : micro)
    for (int32_t t : mb.targets) targets += t >= 0;
  if (targets == 0) throw ValueError("[llama_train] the step's micro-batches hold no target position");
  const float scale = float(1.0 / double(targets));

  LlamaParams grads;
  grads.lora_only = impl_->lora;
  Tensor loss_sum;
  for (const TrainBatch& mb : micro) {
    Tensor loss;
    {
      models::LlamaActs acts = models::llama_forward_train(model, mb.ids);
      loss = models::llama_backward(model, acts, mb.targets, scale, &grads, impl_->config.head_rows);
    }  // activations freed before the next micro-batch
    loss_sum = loss_sum.defined() ? add(loss_sum, loss) : loss;
  }
  std::vector<Tensor> g;
  if (impl_->lora) {
    for (auto& [name, t] : models::llama_lora_named(grads.layers)) g.push_back(*t);
  } else {
    for (auto& [name, t] : models::llama_named(grads, model.config(), model.tied())) g.push_back(*t);
  }
  AdamW::Update u = impl_->opt.step(g);
  // Loss sum and squared norm side by side: one read back per step.
  Tensor out = Tensor::zeros({2}, DType::F32, model.device());
  copy_tensor(loss_sum, out, 0);
  copy_tensor(u.norm_sq, out, 1);
  const std::vector<float> host = out.to_vector<float>();
  TrainStepResult r;
  r.loss = float(double(host[0]) / double(targets));
  r.grad_norm = std::sqrt(host[1]);
  r.lr = u.lr;
  return r;
}

float LlamaTrainer::eval_loss(const TrainBatch& batch) const {
  models::LlamaActs acts = models::llama_forward_train(impl_->model, batch.ids);
  int64_t n = 0;
  for (int32_t t : batch.targets) n += t >= 0;
  Tensor loss = models::llama_backward(impl_->model, acts, batch.targets, 0.0f, nullptr, impl_->config.head_rows);
  return float(double(loss.to_vector<float>()[0]) / double(std::max<int64_t>(n, 1)));
}

std::vector<HostTensor> LlamaTrainer::host_weights() const {
  std::vector<HostTensor> out;
  std::string last;
  for (const NamedTensor& p : impl_->opt.params()) {
    std::vector<float> values = p.value.to_vector<float>();
    if (!out.empty() && p.name == last) {  // the next row chunk of the same table
      out.back().shape[0] += p.value.dim(0);
      out.back().values.insert(out.back().values.end(), values.begin(), values.end());
      continue;
    }
    out.push_back({p.name, p.value.shape(), std::move(values)});
    last = p.name;
  }
  return out;
}

}  // namespace forge
