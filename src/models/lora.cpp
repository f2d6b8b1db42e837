// LoRA adapters (forge/lora.h): PEFT's files to and from the LoraWeights of
// a model's Linears (models/common/weights.h), which apply the delta.
#include "forge/lora.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>


#include "forge/ops.h"
#include "forge/safetensors.h"
#include "models/llama/llama.h"
#include "models/llama/train.h"

namespace forge {

namespace fs = std::filesystem;
using models::Linear;
using models::LlamaModel;

namespace {

constexpr const char* kPrefix = "base_model.model.";
std::string S(int64_t v) { return std::to_string(v); }

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

// The short name of a module ("model.layers.0.self_attn.q_proj" -> "q_proj").
std::string short_name(const std::string& module) { return module.substr(module.rfind('.') + 1); }

void check_config(const LoraConfig& c, const std::vector<std::string>& available, const std::string& where) {
  if (c.rank < 1) throw ValueError("[lora] rank " + S(c.rank) + " must be at least 1" + where);
  if (!(c.alpha > 0) || !std::isfinite(c.alpha))
    throw ValueError("[lora] lora_alpha " + std::to_string(c.alpha) + " must be positive" + where);
  if (c.targets.empty()) throw ValueError("[lora] no target module" + where);
  for (const std::string& t : c.targets) {
    if (std::find(available.begin(), available.end(), t) != available.end()) continue;
    std::string list;
    for (const std::string& a : available) list += (list.empty() ? "" : ", ") + a;
    throw ValueError("[lora] unknown target module '" + t + "'" + where + "; this model has " + list);
  }
}

bool targeted(const LoraConfig& c, const std::string& module) {
  const std::string s = short_name(module);
  return std::find(c.targets.begin(), c.targets.end(), s) != c.targets.end();
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

double LoraConfig::scaling() const {
  return rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank);
}

std::vector<std::string> lora_target_names(const CausalLM& model) {
  std::vector<std::string> out;
  for (auto& [name, lin] : linears_of(const_cast<CausalLM&>(model))) {
    const std::string s = short_name(name);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

LoraConfig read_adapter_config(const fs::path& dir) {
  const fs::path path = dir / "adapter_config.json";
  if (!fs::is_regular_file(path))
    throw IoError("[lora] no adapter_config.json in '" + dir.string() + "' (a PEFT LoRA adapter folder holds "
                  "adapter_config.json and adapter_model.safetensors)");
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw IoError("[lora] '" + path.string() + "' is not a JSON object");
  const std::string where = " in " + path.string();
  auto field = [&](const char* key) -> const nlohmann::json* {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  try {
    if (auto* t = field("peft_type"); t && t->get<std::string>() != "LORA")
      throw ValueError("[lora] peft_type '" + t->get<std::string>() + "'" + where + ": forge reads LoRA adapters");
    LoraConfig c;
    if (!field("r")) throw ValueError("[lora] no 'r'" + where);
    c.rank = j["r"].get<int64_t>();
    c.alpha = field("lora_alpha") ? j["lora_alpha"].get<double>() : 8.0;  // PEFT's default
    c.rslora = field("use_rslora") && j["use_rslora"].get<bool>();
    const nlohmann::json* t = field("target_modules");
    if (!t) throw ValueError("[lora] no 'target_modules'" + where);
    if (!t->is_array())
      throw ValueError("[lora] target_modules" + where + " is " + t->dump() +
                       "; forge reads a list of module names (a regular expression is not supported)");
    c.targets = t->get<std::vector<std::string>>();
    if (field("use_dora") && j["use_dora"].get<bool>()) throw ValueError("[lora] use_dora" + where + " (DoRA) is not supported");
    if (field("fan_in_fan_out") && j["fan_in_fan_out"].get<bool>())
      throw ValueError("[lora] fan_in_fan_out" + where + " is not supported");
    if (auto* b = field("bias"); b && b->get<std::string>() != "none")
      throw ValueError("[lora] bias '" + b->get<std::string>() + "'" + where + ": forge trains no biases (only 'none')");
    for (const char* key : {"rank_pattern", "alpha_pattern"})
      if (auto* p = field(key); p && !p->empty())
        throw ValueError(std::string("[lora] ") + key + where + " (per-module settings) is not supported");
    for (const char* key : {"layers_to_transform", "modules_to_save"})
      if (auto* p = field(key); p && !p->empty())
        throw ValueError(std::string("[lora] ") + key + where + " is not supported");
    if (c.rank < 1) throw ValueError("[lora] r " + S(c.rank) + where + " must be at least 1");
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw ValueError("[lora] " + path.string() + ": a field has the wrong type (" + e.what() + ")");
  }
}

void load_adapter(CausalLM& model, const fs::path& dir) {
  const LoraConfig c = read_adapter_config(dir);
  check_config(c, lora_target_names(model), " in " + (dir / "adapter_config.json").string());
  const fs::path file = dir / "adapter_model.safetensors";
  if (!fs::is_regular_file(file))
    throw IoError("[lora] no adapter_model.safetensors in '" + dir.string() + "'" +
                  (fs::exists(dir / "adapter_model.bin") ? " (adapter_model.bin, a pickle, is not read)" : ""));
  const SafetensorsFile st = SafetensorsFile::open(file);
  auto linears = linears_of(model);
  std::map<std::string, Linear*> by_key;
  for (auto& [name, lin] : linears)
    if (targeted(c, name)) {
      by_key[kPrefix + name + ".lora_A.weight"] = lin;
      by_key[kPrefix + name + ".lora_B.weight"] = lin;
    }
  for (const TensorInfo& t : st.tensors())
    if (!by_key.count(t.name))
      throw ValueError("[lora] " + file.string() + " holds '" + t.name + "', which is no LoRA weight of a targeted "
                       "module of this model (an adapter for another base?)");
  // Every tensor read and checked before any is attached.
  const float scale = float(c.scaling());
  std::vector<std::pair<Linear*, models::LoraWeights>> staged;
  for (auto& [name, lin] : linears) {
    if (!targeted(c, name)) continue;
    models::LoraWeights w;
    w.scale = scale;
    for (const bool is_a : {true, false}) {
      const std::string key = kPrefix + name + (is_a ? ".lora_A.weight" : ".lora_B.weight");
      if (!st.contains(key)) throw ValueError("[lora] " + file.string() + " has no '" + key + "'");
      TensorView v = st.get(key);
      const Shape want = is_a ? Shape{c.rank, lin->in} : Shape{lin->out, c.rank};
      if (v.shape() != want)
        throw ShapeError("[lora] '" + key + "' in " + file.string() + " is " + shape_str(v.shape()) + "; this model (r " +
                         S(c.rank) + ") needs " + shape_str(want) + " (an adapter for another base?)");
      Tensor t = Tensor::from_vector(v.to_f32(), want, model.device());
      (is_a ? w.a : w.b) = t;
    }
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
