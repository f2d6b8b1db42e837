// Gpt2Trainer: gradient accumulation over micro-batches, global-norm
// clipping, AdamW with per-parameter weight decay, the learning-rate schedule;
// the parameter list by Hugging Face name.
#include <cmath>
#include <numbers>
#include <optional>

#include "forge/gpt2_train.h"
#include "models/common/grad_targets.h"
#include "models/gpt2/build.h"
#include "models/gpt2/train_util.h"

namespace forge {

namespace {
enum Stream : uint64_t { kDropout = 0x64726f70 };
}

std::vector<std::pair<std::string, Tensor*>> gpt2_named_params(Gpt2Weights& w) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (Tensor& chunk : w.wte) out.push_back({"wte.weight", &chunk});
  out.push_back({"wpe.weight", &w.wpe});
  for (size_t l = 0; l < w.h.size(); ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    Gpt2Block& b = w.h[l];
    out.insert(out.end(), {{p + "ln_1.weight", &b.ln_1_w},
                           {p + "ln_1.bias", &b.ln_1_b},
                           {p + "attn.c_attn.weight", &b.c_attn.w},
                           {p + "attn.c_attn.bias", &b.c_attn.bias},
                           {p + "attn.c_proj.weight", &b.attn_proj.w},
                           {p + "attn.c_proj.bias", &b.attn_proj.bias},
                           {p + "ln_2.weight", &b.ln_2_w},
                           {p + "ln_2.bias", &b.ln_2_b},
                           {p + "mlp.c_fc.weight", &b.fc.w},
                           {p + "mlp.c_fc.bias", &b.fc.bias},
                           {p + "mlp.c_proj.weight", &b.mlp_proj.w},
                           {p + "mlp.c_proj.bias", &b.mlp_proj.bias}});
  }
  out.insert(out.end(), {{"ln_f.weight", &w.ln_f_w}, {"ln_f.bias", &w.ln_f_b}});
  return out;
}

bool gpt2_decay_matrices(const std::string&, const Shape& shape) { return shape.size() >= 2; }

namespace {

// The trained tensors of w by name: every parameter, or with an adapter
// attached its A and B alone by PEFT key.
std::vector<std::pair<std::string, Tensor*>> trained(Gpt2Weights& w, bool lora) {
  return lora ? gpt2::lora_named(w) : gpt2_named_params(w);
}

std::vector<NamedTensor> named_tensors(Gpt2Weights& w, bool lora) {
  std::vector<NamedTensor> out;
  for (auto& [name, t] : trained(w, lora)) out.push_back({name, *t});
  return out;
}

// The model's weights, checked trainable: a quantized base trains only an adapter.
Gpt2Weights trainable_weights(const Gpt2& model, bool lora) {
  Gpt2Weights w = model.weights();  // handles sharing the model's storage
  bool quantized = w.wte_q.quant.has_value();
  for (const Gpt2Block& b : w.h) quantized = quantized || b.c_attn.quant || b.attn_proj.quant || b.fc.quant || b.mlp_proj.quant;
  if (quantized && !lora)
    throw ValueError("[gpt2_train] full fine-tuning needs dense weights; this model is quantized (train a LoRA "
                     "adapter over it, or train the dense model)");
  // f32 master weights: a bf16 load is for inference and LoRA over it.
  if (!quantized && !lora && !w.h.empty() && w.h.front().c_attn.w.dtype() == DType::BF16)
    throw ValueError("[gpt2_train] full fine-tuning needs f32 weights; this model holds bf16 ones on the device "
                     "(load it with f32 weights to train it, or attach a LoRA adapter)");
  return w;
}

AdamWConfig adamw_config(const Gpt2TrainConfig& c) {
  AdamWConfig a;
  a.schedule = c.schedule;
  a.beta1 = c.beta1;
  a.beta2 = c.beta2;
  a.eps = c.eps;
  a.weight_decay = c.weight_decay;
  a.decays = c.decays;
  a.grad_clip = c.grad_clip;
  return a;
}

// w with each trained tensor replaced by `views`' in trained() order.
Gpt2Weights with_tensors(Gpt2Weights w, bool lora, const std::vector<Tensor>& views) {
  auto named = trained(w, lora);
  for (size_t i = 0; i < named.size(); ++i) *named[i].second = views[i];
  return w;
}

}  // namespace

std::vector<std::pair<std::string, Tensor*>> Gpt2Trainer::named(Gpt2Weights& w) const { return trained(w, lora_); }

Gpt2Trainer::Gpt2Trainer(const Gpt2& model, Gpt2TrainConfig config)
    : model_(model),
      config_(std::move(config)),
      lora_(model.adapter().has_value()),
      w_(trainable_weights(model, lora_)),
      opt_(named_tensors(w_, lora_), adamw_config(config_)),
      m_(with_tensors(w_, lora_, opt_.first_moments())),
      v_(with_tensors(w_, lora_, opt_.second_moments())) {}

Gpt2StepResult Gpt2Trainer::step(const std::vector<Gpt2MicroBatch>& micro) {
  if (micro.empty()) throw ValueError("[gpt2_train] a step needs at least one micro-batch");
  int64_t targets = 0;
  for (const auto& mb : micro)
    for (int32_t t : mb.targets) targets += t >= 0;
  if (targets == 0) throw ValueError("[gpt2_train] the step's micro-batches hold no target position");
  const float scale = float(1.0 / double(targets));

  grads_.clear();
  grads_.lora_only = lora_;
  // Full training writes each gradient where AdamW reads it (no copy into
  // its pages): the slots, sized as the weights, keyed to its views.
  std::optional<models::GradTargets> into_pages;
  if (!lora_) {
    grads_.g.h.resize(model_.weights().h.size());
    grads_.g.wte.resize(model_.weights().wte.size());
    std::vector<Tensor*> slots;
    for (auto& [name, t] : named(grads_.g)) slots.push_back(t);
    into_pages.emplace(slots, opt_.gradient_views());
  }
  Tensor loss_sum;
  for (size_t i = 0; i < micro.size(); ++i) {
    const uint64_t key = gpt2::derive_key(config_.seed, kDropout, uint64_t(opt_.steps_done()), uint64_t(i));
    Tensor loss;
    {
      Gpt2Activations acts = gpt2_forward_train(model_, micro[i].ids, config_.dropout, key);
      loss = gpt2_backward(model_, acts, micro[i].targets, scale, grads_, config_.head_rows);
    }  // activations freed before the next micro-batch
    loss_sum = loss_sum.defined() ? add(loss_sum, loss) : loss;
  }

  into_pages.reset();
  std::vector<Tensor> g;
  for (auto& [name, t] : named(grads_.g)) g.push_back(*t);
  const AdamW::Update u = opt_.step(g);  // g itself stays unclipped
  // Loss sum and squared norm side by side: one read back per step.
  Tensor out = Tensor::zeros({2}, DType::F32, model_.device());
  copy_tensor(loss_sum, out, 0);
  copy_tensor(u.norm_sq, out, 1);
  const std::vector<float> host = out.to_vector<float>();
  if (!keep_grads) grads_.clear();
  Gpt2StepResult r;
  r.loss = float(double(host[0]) / double(targets));
  r.grad_norm = std::sqrt(host[1]);
  r.lr = u.lr;
  return r;
}

namespace {

// Appends the parameters of w to out as host tensors named prefix + name;
// the row chunks of a chunked wte become one [V, C] tensor.
void append_host(const std::vector<std::pair<std::string, Tensor*>>& named, const std::string& prefix,
                 std::vector<Gpt2HostTensor>& out) {
  std::string last;
  for (auto& [name, t] : named) {
    std::vector<float> values = t->to_vector<float>();
    if (!out.empty() && name == last) {  // the next chunk of the same table
      Gpt2HostTensor& whole = out.back();
      whole.shape[0] += t->dim(0);
      whole.values.insert(whole.values.end(), values.begin(), values.end());
      continue;
    }
    out.push_back({prefix + name, t->shape(), std::move(values)});
    last = name;
  }
}

}  // namespace

std::vector<Gpt2HostTensor> Gpt2Trainer::host_weights() const {
  std::vector<Gpt2HostTensor> out;
  Gpt2Weights w = w_;
  append_host(named(w), "", out);
  return out;
}

std::vector<Gpt2HostTensor> Gpt2Trainer::host_state() const {
  std::vector<Gpt2HostTensor> out;
  Gpt2Weights m = m_, v = v_;
  append_host(named(m), "m.", out);
  append_host(named(v), "v.", out);
  return out;
}

void Gpt2Trainer::load_state(const std::vector<Gpt2HostTensor>& state, int64_t steps_done) {
  std::map<std::string, const Gpt2HostTensor*> by;
  for (const auto& t : state) by[t.name] = &t;
  std::vector<Tensor> moments[2];
  for (int k = 0; k < 2; ++k) {
    const char* prefix = k == 0 ? "m." : "v.";
    Gpt2Weights shapes = w_;
    // A chunked wte takes consecutive row blocks of the whole saved table.
    std::map<std::string, int64_t> rows_taken;
    for (auto& [name, t] : named(shapes)) {
      auto it = by.find(prefix + name);
      if (it == by.end()) throw ValueError("[gpt2_train] optimizer state has no '" + std::string(prefix) + name + "'");
      const Gpt2HostTensor& saved = *it->second;
      int64_t& row0 = rows_taken[name];
      Shape want = t->shape();
      if (name == "wte.weight") want[0] = model_.config().vocab_size;
      if (saved.shape != want)
        throw ShapeError("[gpt2_train] optimizer state '" + it->first + "' is " + shape_str(saved.shape) +
                         ", the model needs " + shape_str(want));
      const int64_t row_size = t->numel() / t->dim(0);
      const auto first = saved.values.begin() + row0 * row_size;
      moments[k].push_back(Tensor::from_vector(std::vector<float>(first, first + t->numel()), t->shape()));
      row0 += t->dim(0);
    }
  }
  opt_.restore(steps_done, moments[0], moments[1]);  // into the flat moments m_, v_ view
}

}  // namespace forge
