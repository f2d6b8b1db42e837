// LoRA adapters (forge/lora.h): PEFT's files to and from the LoraWeights of
// a model's Linears (models/common/weights.h), which apply the delta.
#include "forge/lora.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "forge/ops.h"
#include "forge/safetensors.h"
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

LlamaModel& as_llama(CausalLM& model) {
  auto* m = dynamic_cast<LlamaModel*>(&model);
  if (!m)
    throw ValueError("[lora] adapters attach to the Llama family (llama, qwen2, mistral); this model is " +
                     model.info().family);
  return *m;
}
const LlamaModel& as_llama(const CausalLM& model) { return as_llama(const_cast<CausalLM&>(model)); }

std::vector<std::pair<std::string, Linear*>> linears_of(CausalLM& model) {
  return models::llama_linears(as_llama(model).mutable_layers());
}

void detach(CausalLM& model) {
  for (auto& [name, lin] : linears_of(model)) lin->lora = {};
  as_llama(model).adapter().reset();
}

void write_text_atomic(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw IoError("[lora] cannot write '" + path.string() + "'");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw IoError("[lora] cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
}

// Every quantized weight of `m` as dense f32 (a merged delta would be
// rounded away if it were quantized again).
void dequantize_base(LlamaModel& m) {
  for (auto& [name, lin] : models::llama_linears(m.mutable_layers())) {
    if (!lin->quant) continue;
    lin->w = lin->dense_weight();
    lin->q = lin->scales = lin->biases = Tensor();
    lin->quant.reset();
  }
  for (models::Embedding* e : {&m.mutable_embed(), &m.mutable_lm_head()}) {
    if (!e->is_quantized()) continue;
    e->chunks = split_rows_for_binding(e->quantized.dense_weight(), m.device());
    e->chunk_rows = e->chunks[0].dim(0);
    e->quantized = models::Linear{};
  }
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
  const LoraConfig c = read_adapter_config(dir);
  auto linears = linears_of(model);
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
  as_llama(model).adapter() = c;
}

void attach_new_adapter(CausalLM& model, const LoraConfig& c, uint64_t seed) {
  check_config(c, lora_target_names(model), "");
  detach(model);
  std::mt19937_64 rng(seed);
  for (auto& [name, lin] : linears_of(model)) {
    if (!targeted(c, name)) continue;
    const float bound = float(1.0 / std::sqrt(double(lin->in)));
    std::uniform_real_distribution<float> u(-bound, bound);
    std::vector<float> a(size_t(c.rank * lin->in));
    for (float& x : a) x = u(rng);
    lin->lora.a = Tensor::from_vector(a, {c.rank, lin->in}, model.device());
    lin->lora.b = Tensor::zeros({lin->out, c.rank}, DType::F32, model.device());
    lin->lora.scale = float(c.scaling());
  }
  as_llama(model).adapter() = c;
}

std::optional<LoraConfig> attached_adapter(const CausalLM& model) { return as_llama(model).adapter(); }

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
                            {"fan_in_fan_out", false},
                            {"use_rslora", c->rslora},
                            {"use_dora", false},
                            {"inference_mode", true},
                            {"init_lora_weights", true},
                            {"base_model_name_or_path", base_model}};
  write_text_atomic(dir / "adapter_config.json", j.dump(2) + "\n");
}

void merge_adapter(CausalLM& model) {
  if (!attached_adapter(model)) throw ValueError("[lora] merge: the model has no adapter attached");
  LlamaModel& m = as_llama(model);
  if (m.embed().is_quantized() || m.layers().front().q.quant) dequantize_base(m);
  for (auto& [name, lin] : linears_of(model)) {
    if (!lin->lora.defined()) continue;
    MatmulOptions o;
    o.alpha = lin->lora.scale;
    lin->w = add(lin->w, matmul(lin->lora.b, lin->lora.a, o));  // [out, r] @ [r, in]
  }
  detach(model);
}

std::vector<HostTensor> model_weights(const CausalLM& model) {
  const LlamaModel& m = as_llama(model);
  models::LlamaParams p = models::llama_params(m);
  std::vector<HostTensor> out;
  std::string last;
  for (auto& [name, t] : models::llama_named(p, m.config(), m.tied())) {
    std::vector<float> values = t->to_vector<float>();
    if (!out.empty() && name == last) {  // the next row chunk of the same table
      out.back().shape[0] += t->dim(0);
      out.back().values.insert(out.back().values.end(), values.begin(), values.end());
      continue;
    }
    out.push_back({name, t->shape(), std::move(values)});
    last = name;
  }
  return out;
}

}  // namespace forge
