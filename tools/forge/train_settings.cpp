// Run settings in checkpoints and the rules for resuming (see train_settings.h).
#include "train_settings.h"

#include <cmath>
#include <functional>

#include "cli_util.h"
#include "model_arg.h"
#include "train_lora.h"

namespace forge::cli {

namespace {

using nlohmann::json;

enum class OnResume {
  kFixed,  // defines the run: a different value is refused
  kFree,   // taken back unless given again
};

struct Setting {
  const char* flag;
  OnResume policy;
  std::function<json(const TrainArgs&)> get;
  std::function<void(TrainArgs&, const json&)> set;
};

template <class T>
Setting setting(const char* flag, T TrainArgs::*member, OnResume policy) {
  return {flag, policy, [member](const TrainArgs& a) { return json(a.*member); },
          [member](TrainArgs& a, const json& j) { a.*member = j.get<T>(); }};
}

const std::vector<Setting>& settings() {
  using enum OnResume;
  static const std::vector<Setting> list = {
      setting("--data", &TrainArgs::data, kFixed),
      setting("--model", &TrainArgs::model, kFixed),
      setting("--preset", &TrainArgs::preset, kFixed),
      setting("--tokenizer", &TrainArgs::tokenizer, kFixed),
      setting("--batch", &TrainArgs::batch, kFixed),
      setting("--seq", &TrainArgs::seq, kFixed),
      setting("--lr", &TrainArgs::lr, kFixed),
      setting("--min-lr-ratio", &TrainArgs::min_lr_ratio, kFixed),
      setting("--constant-lr", &TrainArgs::constant_lr, kFixed),
      setting("--warmup", &TrainArgs::warmup, kFixed),
      setting("--weight-decay", &TrainArgs::weight_decay, kFixed),
      setting("--decay", &TrainArgs::decay, kFixed),
      setting("--grad-clip", &TrainArgs::grad_clip, kFixed),
      setting("--dropout", &TrainArgs::dropout, kFixed),
      setting("--val-fraction", &TrainArgs::val_fraction, kFixed),
      setting("--seed", &TrainArgs::seed, kFixed),
      setting("--adapter", &TrainArgs::adapter, kFixed),
      setting("--lora-rank", &TrainArgs::lora_rank, kFixed),
      setting("--lora-alpha", &TrainArgs::lora_alpha, kFixed),
      setting("--lora-targets", &TrainArgs::lora_targets, kFixed),
      setting("--rslora", &TrainArgs::rslora, kFixed),
      setting("--micro-batch", &TrainArgs::micro, kFree),
      setting("--eval-every", &TrainArgs::eval_every, kFree),
      setting("--eval-batches", &TrainArgs::eval_batches, kFree),
      setting("--save-every", &TrainArgs::save_every, kFree),
      setting("--sample-tokens", &TrainArgs::sample_tokens, kFree),
      setting("--device", &TrainArgs::device, kFree),
      setting("--dtype", &TrainArgs::dtype, kFree),
  };
  return list;
}

std::string key_of(const char* flag) { return std::string(flag + 2); }

std::string value_text(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

}  // namespace

json train_settings_json(const TrainArgs& a) {
  json j = json::object();
  for (const Setting& s : settings()) j[key_of(s.flag)] = s.get(a);
  j["steps"] = a.steps;
  return j;
}

std::vector<std::string> apply_saved_settings(TrainArgs& a, const json& saved, int64_t step) {
  for (const Setting& s : settings()) {
    const auto it = saved.find(key_of(s.flag));
    if (it == saved.end()) continue;
    if (!a.given.count(s.flag)) {
      s.set(a, *it);
    } else if (s.policy == OnResume::kFixed && s.get(a) != *it) {
      throw UsageError(std::string(s.flag) + " " + value_text(s.get(a)) + " contradicts the run in '" + a.out +
                       "', which was trained with " + s.flag + " " + value_text(*it) +
                       " (leave it out to continue the run, or start a new one)");
    }
  }
  std::vector<std::string> notes;
  const int64_t planned = saved.value("steps", a.steps);
  if (!a.given.count("--steps")) {
    a.steps = planned;
  } else if (a.steps <= step) {
    throw UsageError("--steps " + std::to_string(a.steps) + ": the run in '" + a.out + "' is already at step " +
                     std::to_string(step));
  } else if (a.steps != planned) {
    const std::string n = std::to_string(a.steps), was = std::to_string(planned);
    notes.push_back("--steps " + n + " (was " + was + "): " +
                    (a.constant_lr ? std::string("the learning rate after the warmup stays constant, as before")
                                   : "the cosine decay now ends at step " + n + " instead of " + was +
                                         ", so the learning rate from step " + std::to_string(step) +
                                         " on differs from the original schedule"));
  }
  return notes;
}

DType train_weights_dtype(const TrainArgs& a) {
  const DType d = weights_dtype(a.dtype);
  if (d != DType::F32 && !wants_lora(a))
    throw UsageError("--dtype " + a.dtype + " keeps the frozen base of a LoRA run in 16 bits; full training updates "
                     "f32 weights (add --lora-rank R or --adapter DIR, or drop --dtype)");
  return d;
}

Gpt2TrainConfig make_train_config(const TrainArgs& a, bool fixed) {
  Gpt2TrainConfig c;
  c.schedule.lr = a.lr;
  c.schedule.warmup = fixed ? 0 : a.warmup;
  c.schedule.total = a.steps;
  c.schedule.min_ratio = a.min_lr_ratio;
  c.schedule.cosine = !(fixed || a.constant_lr);
  c.weight_decay = a.weight_decay;
  if (a.decay == "matrices") c.decays = gpt2_decay_matrices;
  c.grad_clip = fixed && !a.given.count("--grad-clip") ? 0.0f : a.grad_clip;
  c.dropout = fixed ? Gpt2Dropout{} : Gpt2Dropout{a.dropout, a.dropout, a.dropout};
  c.seed = a.seed;
  return c;
}

TrainConfig make_llama_train_config(const TrainArgs& a) {
  const Gpt2TrainConfig g = make_train_config(a, false);  // the same flags, the same schedule
  TrainConfig c;
  c.optimizer = {g.schedule, g.beta1, g.beta2, g.eps, g.weight_decay, g.decays, g.grad_clip};
  c.seed = a.seed;
  if (a.dropout > 0) c.attention_dropout = a.dropout;
  return c;
}

bool diverged(double loss, double grad_norm) { return !std::isfinite(loss) || !std::isfinite(grad_norm); }

void stop_diverged(int64_t step, double loss, double grad_norm, const std::string& kept, bool first_step) {
  if (first_step)
    throw ValueError("[train] the first step's loss " + std::to_string(loss) + " or grad_norm " +
                     std::to_string(grad_norm) + " is not finite before any update: the weights as loaded hold "
                     "values that are not finite, or the forward pass overflows; " + kept);
  throw ValueError("[train] training diverged at step " + std::to_string(step) + " (loss " + std::to_string(loss) +
                   ", grad_norm " + std::to_string(grad_norm) + "); " + kept +
                   ". Try a lower --lr, more --warmup or --grad-clip");
}

}  // namespace forge::cli
