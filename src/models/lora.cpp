// LoRA adapters (forge/lora.h): PEFT's files to and from the LoraWeights of
// a model's Linears (models/common/weights.h), which apply the delta; GPT-2's
// and the Llama family's alike.
#include "forge/lora.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "forge/gpt2_train.h"
#include "forge/ops.h"
#include "forge/safetensors.h"
#include "io/model_folder.h"
#include "models/common/weights.h"
#include "models/gpt2/build.h"
#include "models/lora_files.h"
#include "models/llama/llama.h"
#include "models/llama/train.h"

namespace forge {

namespace fs = std::filesystem;
using models::Linear;
using models::LlamaModel;
using lora::check_config;
using lora::short_name;
using lora::targeted;

namespace {

constexpr const char* kPrefix = "base_model.model.";

// The Linears of a model that adapters attach to, by transformers module
// name, and where the model keeps its adapter's settings.
struct Adaptable {
  std::vector<std::pair<std::string, Linear*>> linears;
  std::optional<LoraConfig>* adapter = nullptr;
  bool conv1d = false;  // GPT-2: weights [in, out] (PEFT's fan_in_fan_out)
};

Adaptable adaptable(CausalLM& model) {
  if (auto* m = dynamic_cast<LlamaModel*>(&model)) return {models::llama_linears(m->mutable_layers()), &m->adapter(), false};
  if (auto* g = dynamic_cast<Gpt2*>(&model)) return {gpt2::linears(g->mutable_weights()), &g->adapter(), true};
  throw ValueError("[lora] adapters attach to GPT-2 and the Llama family (llama, qwen2, mistral); this model is " +
                   model.info().family);
}
Adaptable adaptable(const CausalLM& model) { return adaptable(const_cast<CausalLM&>(model)); }

std::vector<std::pair<std::string, Linear*>> linears_of(CausalLM& model) { return adaptable(model).linears; }

void detach(CausalLM& model) {
  Adaptable a = adaptable(model);
  for (auto& [name, lin] : a.linears) lin->lora = {};
  a.adapter->reset();
}

// Every quantized weight of the model as dense f32 (a merged delta would be
// rounded away if it were quantized again); a dense model is left as it is.
void dequantize_base(LlamaModel& m) {
  for (auto& [name, lin] : models::llama_linears(m.mutable_layers())) models::make_dense(*lin);
  for (models::Embedding* e : {&m.mutable_embed(), &m.mutable_lm_head()}) {
    if (!e->is_quantized()) continue;
    e->chunks = split_rows_for_binding(e->quantized.dense_weight(), m.device());
    e->chunk_rows = e->chunks[0].dim(0);
    e->quantized = models::Linear{};
  }
}

// GPT-2: the Conv1D projections back to [in, out], the token table (the tied
// head too) to dense row chunks.
void dequantize_base(Gpt2& g) {
  Gpt2Weights& w = g.mutable_weights();
  for (auto& [name, lin] : gpt2::linears(w)) models::make_dense(*lin, true);
  if (!w.wte_q.quant) return;
  w.wte = split_rows_for_binding(w.wte_q.dense_weight(), g.device());
  w.wte_chunk_rows = w.wte[0].dim(0);
  w.wte_q = models::Linear{};
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// An adapter made for the other family (no target among the model's
// modules) is said to be one, before the per-module checks.
void check_family(const LoraConfig& c, const std::vector<std::string>& available, const std::string& family,
                  const fs::path& dir) {
  bool llama = true;
  for (const std::string& t : c.targets) {
    if (std::find(available.begin(), available.end(), t) != available.end()) return;
    llama = llama && t.size() > 5 && t.compare(t.size() - 5, 5, "_proj") == 0;
  }
  if (c.targets.empty()) return;  // check_config says so
  throw ValueError("[lora] the adapter in '" + dir.string() + "' targets " + joined(c.targets) + ", modules of " +
                   (llama ? "the Llama family" : "another model family") + "; this " + family + " model has " +
                   joined(available));
}

}  // namespace

std::vector<std::string> lora_target_names(const CausalLM& model) {
  std::vector<std::string> out;
  for (auto& [name, lin] : linears_of(const_cast<CausalLM&>(model))) {
    const std::string s = short_name(name);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

void load_adapter(CausalLM& model, const fs::path& dir) {
  LoraConfig c = read_adapter_config(dir);
  const Adaptable target = adaptable(model);
  // PEFT sets the flag for Conv1D itself (warning when a config says false),
  // so GPT-2 takes either; on an nn.Linear it would mean transposed weights.
  if (c.fan_in_fan_out && !target.conv1d)
    throw ValueError("[lora] fan_in_fan_out in " + (dir / "adapter_config.json").string() +
                     " is for Conv1D modules (GPT-2); this " + model.info().family + " model's are nn.Linear");
  c.fan_in_fan_out = target.conv1d;
  check_family(c, lora_target_names(model), model.info().family, dir);
  auto linears = target.linears;
  std::vector<lora::Module> modules;
  for (auto& [name, lin] : linears) modules.push_back({name, lin->in, lin->out});
  // Every tensor read and checked before any is attached.
  std::vector<lora::ModuleWeights> read = lora::read_adapter_weights(dir, c, modules);
  std::vector<std::pair<Linear*, models::LoraWeights>> staged;
  for (lora::ModuleWeights& r : read) {
    Linear* lin = linears[r.module].second;
    models::LoraWeights w;
    w.scale = float(c.scaling());
    w.a = Tensor::from_vector(r.a, {c.rank, lin->in}, model.device());
    w.b = Tensor::from_vector(r.b, {lin->out, c.rank}, model.device());
    staged.push_back({lin, w});
  }
  detach(model);
  for (auto& [lin, w] : staged) lin->lora = w;
  *target.adapter = c;
}

void attach_new_adapter(CausalLM& model, const LoraConfig& config, uint64_t seed) {
  check_config(config, lora_target_names(model), "");
  detach(model);
  const Adaptable target = adaptable(model);
  LoraConfig c = config;
  c.fan_in_fan_out = target.conv1d;
  std::mt19937_64 rng(seed);
  for (auto& [name, lin] : target.linears) {
    if (!targeted(c, name)) continue;
    const float bound = float(1.0 / std::sqrt(double(lin->in)));
    std::uniform_real_distribution<float> u(-bound, bound);
    std::vector<float> a(size_t(c.rank * lin->in));
    for (float& x : a) x = u(rng);
    lin->lora.a = Tensor::from_vector(a, {c.rank, lin->in}, model.device());
    lin->lora.b = Tensor::zeros({lin->out, c.rank}, DType::F32, model.device());
    lin->lora.scale = float(c.scaling());
  }
  *target.adapter = c;
}

std::optional<LoraConfig> attached_adapter(const CausalLM& model) { return *adaptable(model).adapter; }

std::vector<HostTensor> adapter_weights(const CausalLM& model) {
  if (!attached_adapter(model)) throw ValueError("[lora] the model has no adapter attached");
  std::vector<HostTensor> out;
  for (auto& [name, lin] : linears_of(const_cast<CausalLM&>(model))) {
    if (!lin->lora.defined()) continue;
    out.push_back({kPrefix + name + ".lora_A.weight", lin->lora.a.shape(), lin->lora.a.to_vector<float>()});
    out.push_back({kPrefix + name + ".lora_B.weight", lin->lora.b.shape(), lin->lora.b.to_vector<float>()});
  }
  return out;
}

void save_adapter(const CausalLM& model, const fs::path& dir, const std::string& base_model) {
  const std::optional<LoraConfig> c = attached_adapter(model);
  const std::vector<HostTensor> weights = adapter_weights(model);
  fs::create_directories(dir);
  std::vector<TensorToWrite> tensors;
  for (const HostTensor& t : weights) tensors.push_back({t.name, StDType::F32, t.shape, std::as_bytes(std::span(t.values))});
  write_safetensors(dir / "adapter_model.safetensors", tensors, {{"format", "pt"}});
  const nlohmann::json j = {{"peft_type", "LORA"},
                            {"task_type", "CAUSAL_LM"},
                            {"r", c->rank},
                            {"lora_alpha", c->alpha},
                            {"lora_dropout", 0.0},
                            {"target_modules", c->targets},
                            {"bias", "none"},
                            {"fan_in_fan_out", c->fan_in_fan_out},
                            {"use_rslora", c->rslora},
                            {"use_dora", false},
                            {"inference_mode", true},
                            {"init_lora_weights", true},
                            {"base_model_name_or_path", base_model}};
  io::write_text_file(dir / "adapter_config.json", j.dump(2) + "\n");
}

void merge_adapter(CausalLM& model) {
  if (!attached_adapter(model)) throw ValueError("[lora] merge: the model has no adapter attached");
  if (auto* m = dynamic_cast<LlamaModel*>(&model)) dequantize_base(*m);
  if (auto* g = dynamic_cast<Gpt2*>(&model)) dequantize_base(*g);
  for (auto& [name, lin] : linears_of(model)) {
    if (!lin->lora.defined()) continue;
    // In W's orientation ([in, out] for Conv1D); a bf16 W widens to f32.
    lin->w = add(lin->dense_weight(), lin->lora_delta());
  }
  detach(model);
}

namespace {
// Appends `t`'s values as the host tensor `name`, or, when the last one
// appended has that name, as its next rows (a table held in row chunks).
void append_rows(std::vector<HostTensor>& out, const std::string& name, const Tensor& t) {
  std::vector<float> values = t.to_vector<float>();
  if (!out.empty() && out.back().name == name) {
    out.back().shape[0] += t.dim(0);
    out.back().values.insert(out.back().values.end(), values.begin(), values.end());
    return;
  }
  out.push_back({name, t.shape(), std::move(values)});
}
}  // namespace

std::vector<HostTensor> model_weights(const CausalLM& model) {
  if (const auto* g = dynamic_cast<const Gpt2*>(&model)) {
    Gpt2Weights w = g->weights();  // handles sharing the model's storage
    std::vector<HostTensor> out;
    for (auto& [name, t] : gpt2_named_params(w)) {
      if (!t->defined()) throw ValueError("[lora] model_weights: '" + name + "' is quantized; GPT-2 is written dense");
      append_rows(out, name, *t);
    }
    return out;
  }
  const auto* llama = dynamic_cast<const LlamaModel*>(&model);
  if (!llama) throw ValueError("[lora] model_weights: no writer for a " + model.info().family + " model");
  const LlamaModel& m = *llama;
  models::LlamaParams p = models::llama_params(m);
  std::vector<HostTensor> out;
  for (auto& [name, t] : models::llama_named(p, m.config(), m.tied())) append_rows(out, name, *t);
  return out;
}

}  // namespace forge
