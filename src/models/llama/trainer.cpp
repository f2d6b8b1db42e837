// LlamaTrainer: gradient accumulation over micro-batches, then one AdamW
// update (forge/train.h) of every parameter by Hugging Face name (or of a
// LoRA adapter's A and B), and the optimizer state of checkpoints.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <optional>

#include "forge/ops.h"
#include "forge/safetensors.h"
#include "forge/train.h"
#include "models/common/grad_targets.h"
#include "models/common/keys.h"
#include "models/llama/train.h"

namespace forge {

using models::LlamaModel;
using models::LlamaParams;

struct LlamaTrainer::Impl {
  const LlamaModel& model;
  TrainConfig config;
  bool lora;  // an adapter is attached: it alone trains
  float attn_dropout;
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
      : model(m),
        config(c),
        lora(m.adapter().has_value()),
        attn_dropout(float(c.attention_dropout.value_or(m.config().attention_dropout))),
        opt(params_of(m), c.optimizer) {
    if (!(attn_dropout >= 0 && attn_dropout < 1))
      throw ValueError("[llama_train] attention dropout " + std::to_string(attn_dropout) + " must lie in [0, 1)");
  }
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
  // Full training writes each gradient where AdamW reads it (no copy into
  // its pages): the slots, sized as the weights, keyed to its views.
  std::optional<models::GradTargets> into_pages;
  if (!impl_->lora) {
    grads.embed.resize(model.embed().chunks.size());
    grads.layers.resize(model.layers().size());
    if (!model.tied()) grads.lm_head.resize(model.lm_head().chunks.size());
    std::vector<Tensor*> slots;
    for (auto& [name, t] : models::llama_named(grads, model.config(), model.tied())) slots.push_back(t);
    into_pages.emplace(slots, impl_->opt.gradient_views());
  }
  Tensor loss_sum;
  const uint64_t step = uint64_t(impl_->opt.steps_done());
  for (size_t i = 0; i < micro.size(); ++i) {
    const TrainBatch& mb = micro[i];
    if (std::none_of(mb.targets.begin(), mb.targets.end(), [](int32_t t) { return t >= 0; }))
      continue;  // contributes nothing (a window of prompt tokens only)
    Tensor loss;
    {
      const uint64_t key = models::derive_key(impl_->config.seed, step, uint64_t(i));
      models::LlamaActs acts = models::llama_forward_train(model, mb.ids, impl_->attn_dropout, key);
      loss = models::llama_backward(model, acts, mb.targets, scale, &grads, impl_->config.head_rows);
    }  // activations freed before the next micro-batch
    loss_sum = loss_sum.defined() ? add(loss_sum, loss) : loss;
  }
  into_pages.reset();
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

namespace {


std::string key(char which, size_t i, const std::string& name) {
  return std::string(1, which) + "." + std::to_string(i) + "." + name;
}

}  // namespace

void LlamaTrainer::write_state(const std::filesystem::path& dir) const {
  const AdamW& opt = impl_->opt;
  std::vector<std::vector<float>> host;
  std::vector<TensorToWrite> tensors;
  host.reserve(2 * opt.params().size());
  for (size_t i = 0; i < opt.params().size(); ++i)
    for (const char which : {'m', 'v'}) {
      const Tensor& t = which == 'm' ? opt.first_moments()[i] : opt.second_moments()[i];
      host.push_back(t.to_vector<float>());
      tensors.push_back({key(which, i, opt.params()[i].name), StDType::F32, t.shape(),
                         std::as_bytes(std::span(host.back()))});
    }
  write_safetensors(dir / "optimizer.safetensors", tensors, {{"step", std::to_string(opt.steps_done())}});
}

void LlamaTrainer::read_state(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "optimizer.safetensors";
  if (!std::filesystem::is_regular_file(file)) throw IoError("[llama_train] no optimizer state '" + file.string() + "'");
  const SafetensorsFile f = SafetensorsFile::open(file);
  const auto it = f.metadata().find("step");
  int64_t step = -1;
  if (it != f.metadata().end()) {
    const std::string& s = it->second;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
    if (ec != std::errc() || end != s.data() + s.size() || step < 0) step = -1;
  }
  if (step < 0) throw IoError("[llama_train] " + file.string() + " has no valid step in its metadata");
  AdamW& opt = impl_->opt;
  std::vector<Tensor> m, v;
  for (size_t i = 0; i < opt.params().size(); ++i)
    for (const char which : {'m', 'v'}) {
      const std::string k = key(which, i, opt.params()[i].name);
      if (!f.contains(k))
        throw IoError("[llama_train] " + file.string() + " has no '" + k +
                      "': the state of another model or of another set of trained parameters");
      TensorView t = f.get(k);
      (which == 'm' ? m : v).push_back(Tensor::from_vector(t.to_f32(), t.shape()));
    }
  if (f.tensors().size() != 2 * opt.params().size())
    throw IoError("[llama_train] " + file.string() + " holds " + std::to_string(f.tensors().size()) +
                  " moments; this trainer has " + std::to_string(2 * opt.params().size()));
  opt.restore(step, m, v);
}

}  // namespace forge
