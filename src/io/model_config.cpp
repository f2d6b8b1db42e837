// Hugging Face config.json -> ModelConfig.
#include "forge/model_config.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <fstream>
#include <sstream>

#include "forge/error.h"
#include "io/config_reader.h"
#include "io/json_strict.h"

namespace forge {

namespace {

using json = nlohmann::json;
using io::ConfigReader;

ValueError bad(const ConfigReader& r, const std::string& what) {
  return ValueError("[config] " + what + " in " + r.source());
}

std::string keyval(const ConfigReader& r, const char* key, int64_t v) { return r.name(key) + " = " + std::to_string(v); }

Gpt2Config parse_gpt2(const ConfigReader& r) {
  Gpt2Config c;
  c.vocab_size = r.positive("vocab_size");
  c.n_embd = r.positive("n_embd");
  c.n_layer = r.positive("n_layer");
  c.n_head = r.positive("n_head");
  if (auto p = r.opt_positive("n_positions"))
    c.n_positions = *p;
  else if (auto n = r.opt_positive("n_ctx"))
    c.n_positions = *n;
  else
    throw IoError("[config] missing required key 'n_positions' (or 'n_ctx') in " + r.source());
  c.n_inner = r.opt_positive("n_inner").value_or(4 * c.n_embd);
  c.layer_norm_epsilon = r.opt_number("layer_norm_epsilon").value_or(c.layer_norm_epsilon);
  if (c.layer_norm_epsilon <= 0) throw bad(r, "'layer_norm_epsilon' must be positive");
  c.activation_function = r.opt_string("activation_function").value_or(c.activation_function);
  c.tie_word_embeddings = r.opt_boolean("tie_word_embeddings").value_or(true);
  if (c.n_embd % c.n_head != 0)
    throw bad(r, keyval(r, "n_head", c.n_head) + " does not divide " + keyval(r, "n_embd", c.n_embd));
  return c;
}

// A rope_scaling object, or the scaling part of rope_parameters. nullopt for plain RoPE
// given through rope_parameters.
std::optional<RopeScaling> parse_rope_scaling(const ConfigReader& r, bool keep_default) {
  RopeScaling s;
  auto type = r.opt_string("rope_type");
  if (!type) type = r.opt_string("type");
  if (!type) throw IoError("[config] missing required key " + r.name("rope_type") + " in " + r.source());
  s.type = *type;
  if (s.type == "default") {
    if (!keep_default) return std::nullopt;
    return s;
  }
  if (s.type != "linear" && s.type != "llama3")
    throw bad(r, "unsupported RoPE scaling type '" + s.type + "' (" + r.name("rope_type") +
                     "); supported: default, linear, llama3");
  s.factor = r.number("factor");
  if (s.factor <= 0) throw bad(r, r.name("factor") + " must be positive");
  if (s.type == "llama3") {
    s.low_freq_factor = r.number("low_freq_factor");
    s.high_freq_factor = r.number("high_freq_factor");
    s.original_max_position_embeddings = r.positive("original_max_position_embeddings");
    if (s.low_freq_factor <= 0 || s.high_freq_factor <= s.low_freq_factor)
      throw bad(r, r.name("high_freq_factor") + " must exceed " + r.name("low_freq_factor") + " > 0");
  }
  return s;
}

const json& sub_object(const json& j, const char* key, const std::string& source) {
  const json& v = j.at(key);
  if (!v.is_object())
    throw IoError("[config] '" + std::string(key) + "' is " + v.dump() + ", expected an object in " + source);
  return v;
}

// The attention window of every layer: "layer_types" when given
// ("full_attention" / "sliding_attention"), else Mistral's "sliding_window" on
// every layer, else Qwen2's "use_sliding_window" from "max_window_layers" on.
// Empty when every layer attends to all positions.
std::vector<int64_t> parse_layer_windows(const json& j, const ConfigReader& r, const LlamaConfig& c) {
  const int64_t L = c.num_hidden_layers;
  const std::optional<int64_t> window = r.opt_positive("sliding_window");
  std::vector<int64_t> out(size_t(L), 0);
  bool any = false;
  if (r.has("layer_types")) {
    const json& types = j.at("layer_types");
    if (!types.is_array() || int64_t(types.size()) != L)
      throw IoError("[config] 'layer_types' must be a list of " + std::to_string(L) + " strings in " + r.source());
    for (int64_t l = 0; l < L; ++l) {
      const json& t = types[size_t(l)];
      if (t == "full_attention") continue;
      if (t != "sliding_attention")
        throw bad(r, "unsupported 'layer_types[" + std::to_string(l) + "]' " + t.dump() +
                         " (supported: full_attention, sliding_attention)");
      if (!window) throw bad(r, "'layer_types' asks for sliding attention but 'sliding_window' is not set");
      out[size_t(l)] = *window, any = true;
    }
  } else if (c.model_type == "qwen2") {
    if (r.opt_boolean("use_sliding_window").value_or(false) && window) {
      const int64_t first = r.opt_integer("max_window_layers").value_or(L);
      for (int64_t l = std::max<int64_t>(first, 0); l < L; ++l) out[size_t(l)] = *window, any = true;
    }
  } else if (c.model_type == "mistral" && window) {
    std::fill(out.begin(), out.end(), *window);
    any = true;
  }
  if (!any) out.clear();
  return out;
}

LlamaConfig parse_llama(const json& j, const ConfigReader& r, const std::string& model_type) {
  LlamaConfig c;
  c.model_type = model_type;
  c.vocab_size = r.positive("vocab_size");
  c.hidden_size = r.positive("hidden_size");
  c.intermediate_size = r.positive("intermediate_size");
  c.num_hidden_layers = r.positive("num_hidden_layers");
  c.num_attention_heads = r.positive("num_attention_heads");
  c.num_key_value_heads = r.opt_positive("num_key_value_heads").value_or(c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw bad(r, keyval(r, "num_key_value_heads", c.num_key_value_heads) + " does not divide " +
                     keyval(r, "num_attention_heads", c.num_attention_heads));
  if (auto hd = r.opt_positive("head_dim")) {
    c.head_dim = *hd;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      throw bad(r, keyval(r, "num_attention_heads", c.num_attention_heads) + " does not divide " +
                       keyval(r, "hidden_size", c.hidden_size) + " (and 'head_dim' is absent)");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) throw bad(r, "head_dim " + std::to_string(c.head_dim) + " must be even for RoPE");
  c.max_position_embeddings = r.opt_positive("max_position_embeddings").value_or(c.max_position_embeddings);
  c.rms_norm_eps = r.opt_number("rms_norm_eps").value_or(c.rms_norm_eps);
  if (c.rms_norm_eps <= 0) throw bad(r, "'rms_norm_eps' must be positive");
  c.hidden_act = r.opt_string("hidden_act").value_or(c.hidden_act);
  if (c.hidden_act != "silu")
    throw bad(r, "unsupported 'hidden_act' '" + c.hidden_act + "' (supported: silu)");
  c.attention_bias = r.opt_boolean("attention_bias").value_or(false);
  c.mlp_bias = r.opt_boolean("mlp_bias").value_or(false);
  c.qkv_bias = model_type == "qwen2";  // Qwen2Attention: q, k, v with bias, o without
  c.tie_word_embeddings = r.opt_boolean("tie_word_embeddings").value_or(false);
  c.attention_dropout = r.opt_number("attention_dropout").value_or(0.0);
  if (!(c.attention_dropout >= 0 && c.attention_dropout < 1))
    throw bad(r, "'attention_dropout' = " + std::to_string(c.attention_dropout) + " must lie in [0, 1)");

  std::optional<double> theta = r.opt_number("rope_theta");
  if (r.has("rope_parameters")) {
    ConfigReader rp(sub_object(j, "rope_parameters", r.source()), r.source(), "rope_parameters");
    if (auto t = rp.opt_number("rope_theta")) {
      if (theta && std::fabs(*theta - *t) > 1e-6 * std::fabs(*t))
        throw bad(r, "'rope_theta' = " + std::to_string(*theta) + " disagrees with 'rope_parameters.rope_theta' = " +
                         std::to_string(*t));
      theta = t;
    }
    if (rp.has("rope_type") || rp.has("type")) c.rope_scaling = parse_rope_scaling(rp, false);
  }
  if (r.has("rope_scaling")) {
    ConfigReader rs(sub_object(j, "rope_scaling", r.source()), r.source(), "rope_scaling");
    c.rope_scaling = parse_rope_scaling(rs, true);
  }
  c.rope_theta = theta.value_or(c.rope_theta);
  if (c.rope_theta <= 0) throw bad(r, "'rope_theta' must be positive");
  validate(c, r.source());  // before anything is sized by the layer count
  c.layer_window = parse_layer_windows(j, r, c);
  return c;
}

QuantSpec parse_quant_spec(const ConfigReader& q) {
  QuantSpec c;
  // Checked as int64: a cast first would wrap 2^32 + 64 to an accepted 64.
  const int64_t group = q.positive("group_size"), bits = q.positive("bits");
  if (bits != 2 && bits != 4 && bits != 8)
    throw ValueError("[config] " + q.name("bits") + " = " + std::to_string(bits) + " is not one of 2, 4, 8 in " +
                     q.source());
  if (group != 32 && group != 64 && group != 128)
    throw ValueError("[config] " + q.name("group_size") + " = " + std::to_string(group) +
                     " is not supported (32, 64 or 128) in " + q.source());
  c.group_size = int(group);
  c.bits = int(bits);
  return c;
}

std::optional<QuantizationConfig> parse_quantization(const json& j, const std::string& source) {
  std::optional<QuantizationConfig> found;
  for (const char* key : {"quantization", "quantization_config"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const json& obj = sub_object(j, key, source);
    ConfigReader q(obj, source, key);
    if (auto method = q.opt_string("quant_method"))
      throw ValueError("[config] unsupported " + q.name("quant_method") + " '" + *method +
                       "' (only MLX affine group quantization) in " + source);
    QuantSpec spec = parse_quant_spec(q);
    QuantizationConfig c;
    c.group_size = spec.group_size;
    c.bits = spec.bits;
    // Every other key is a module path: {group_size, bits} or false.
    for (const auto& [path, v] : obj.items()) {
      if (path == "group_size" || path == "bits" || path == "mode") continue;
      const std::string where = std::string(key) + "." + path;
      if (v.is_boolean()) {
        if (v.get<bool>()) c.overrides[path] = spec;
        else c.overrides[path] = std::nullopt;
      } else if (v.is_object()) {
        c.overrides[path] = parse_quant_spec(ConfigReader(v, source, where));
      } else {
        throw IoError("[config] '" + where + "' is " + v.dump() + ", expected {group_size, bits} or false in " + source);
      }
    }
    if (auto mode = q.opt_string("mode"); mode && *mode != "affine")
      throw ValueError("[config] unsupported " + q.name("mode") + " '" + *mode + "' (only affine) in " + source);
    if (found && (found->bits != c.bits || found->group_size != c.group_size || found->overrides.size() != c.overrides.size()))
      throw ValueError("[config] 'quantization' and 'quantization_config' disagree in " + source);
    found = c;
  }
  return found;
}

void parse_special_tokens(const json& j, const ConfigReader& r, ModelConfig& m) {
  m.bos_token_id = r.opt_integer("bos_token_id");
  if (!r.has("eos_token_id")) return;
  const json& e = j.at("eos_token_id");
  if (e.is_array()) {
    for (const json& id : e) {
      if (!id.is_number_integer())
        throw IoError("[config] 'eos_token_id' holds " + id.dump() + ", expected integers in " + r.source());
      m.eos_token_ids.push_back(id.get<int64_t>());
    }
  } else {
    m.eos_token_ids.push_back(r.integer("eos_token_id"));
  }
}

}  // namespace

const char* arch_name(Arch a) { return a == Arch::Gpt2 ? "gpt2" : "llama"; }

const Gpt2Config& ModelConfig::gpt2() const {
  if (arch != Arch::Gpt2) throw ValueError(std::string("[config] asked for a gpt2 config but ") + source + " is " + arch_name(arch));
  return std::get<Gpt2Config>(params);
}
const LlamaConfig& ModelConfig::llama() const {
  if (arch != Arch::Llama) throw ValueError(std::string("[config] asked for a llama config but ") + source + " is " + arch_name(arch));
  return std::get<LlamaConfig>(params);
}
bool ModelConfig::tie_word_embeddings() const {
  return arch == Arch::Gpt2 ? gpt2().tie_word_embeddings : llama().tie_word_embeddings;
}
int64_t ModelConfig::vocab_size() const { return arch == Arch::Gpt2 ? gpt2().vocab_size : llama().vocab_size; }
int64_t ModelConfig::context_length() const {
  return arch == Arch::Gpt2 ? gpt2().n_positions : llama().max_position_embeddings;
}

std::optional<QuantSpec> QuantizationConfig::for_module(const std::string& path) const {
  auto it = overrides.find(path);
  if (it != overrides.end()) return it->second;
  return QuantSpec{group_size, bits};
}

namespace {

ModelConfig parse_config_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw IoError("[config] top level is a JSON " + std::string(j.type_name()) + ", not an object in " + source);
  ConfigReader r(j, source);
  auto type = r.opt_string("model_type");
  if (!type) throw IoError("[config] missing required key 'model_type' in " + source);
  ModelConfig m;
  m.source = source;
  // model_type -> the architecture class Hugging Face names for it.
  static const std::map<std::string, std::string> families = {{"gpt2", "GPT2LMHeadModel"},
                                                              {"llama", "LlamaForCausalLM"},
                                                              {"qwen2", "Qwen2ForCausalLM"},
                                                              {"mistral", "MistralForCausalLM"}};
  auto family = families.find(*type);
  if (family == families.end())
    throw ValueError("[config] unsupported 'model_type' '" + *type +
                     "' (supported: gpt2, llama, qwen2, mistral) in " + source);
  m.architecture = family->second;
  if (r.has("architectures")) {
    const json& a = j.at("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      throw IoError("[config] 'architectures' is " + a.dump() + ", expected a list of names in " + source);
    const std::string name = a[0].get<std::string>();
    if (name != family->second)
      throw ValueError("[config] unsupported 'architectures' value '" + name + "' for model_type '" + *type +
                       "' (supported: " + family->second + ") in " + source);
  }
  if (*type == "gpt2") {
    m.arch = Arch::Gpt2;
    m.params = parse_gpt2(r);
    validate(std::get<Gpt2Config>(m.params), source);
  } else {
    m.arch = Arch::Llama;
    m.params = parse_llama(j, r, *type);
  }
  m.quantization = parse_quantization(j, source);
  parse_special_tokens(j, r, m);
  return m;
}

}  // namespace

ModelConfig parse_config(std::string_view json_text, const std::string& source) {
  json j = io::parse_json_strict(json_text, "config", source);
  try {
    return parse_config_json(j, source);
  } catch (const json::exception& e) {
    // The readers check every type they read; this keeps any miss a forge error.
    throw IoError("[config] a value has the wrong JSON type in " + source + " (" + e.what() + ")");
  }
}

namespace {

struct Checker {
  const std::string& source;
  static std::string said(const char* key, const std::string& v) { return std::string("'") + key + "' = " + v; }
  void positive(const char* key, int64_t v) const {
    if (v <= 0) fail(said(key, std::to_string(v)) + " must be positive");
    // Two sizes multiply into a tensor's element count; keep every product in int64.
    if (v > INT32_MAX) fail(said(key, std::to_string(v)) + " is too large");
  }
  void divides(const char* a, int64_t av, const char* b, int64_t bv) const {
    if (bv % av != 0) fail(said(a, std::to_string(av)) + " does not divide " + said(b, std::to_string(bv)));
  }
  void positive(const char* key, double v) const {
    if (!(v > 0) || !std::isfinite(v)) fail(said(key, std::to_string(v)) + " must be positive");
  }
  // Parameters (embeddings plus layers of about 12 C^2 or 4 H^2 + 3 H I) past 2^48 no
  // machine holds; refusing them keeps every count well inside int64.
  void total(double params) const {
    if (params > double(int64_t(1) << 48))
      fail("the model would have " + std::to_string(params) + " parameters, more than any device holds");
  }
  // Per-layer lists (windows, caches, weights) are sized by it; released
  // models have at most a few hundred layers.
  void layers(const char* key, int64_t v) const {
    positive(key, v);
    if (v > kMaxLayers)
      fail(said(key, std::to_string(v)) + " is more layers than forge supports (" + std::to_string(kMaxLayers) + ")");
  }
  static constexpr int64_t kMaxLayers = 65536;
  [[noreturn]] void fail(const std::string& what) const { throw ValueError("[config] " + what + " in " + source); }
};

}  // namespace

void validate(const Gpt2Config& c, const std::string& source) {
  Checker k{source};
  k.positive("vocab_size", c.vocab_size);
  k.positive("n_positions", c.n_positions);
  k.positive("n_embd", c.n_embd);
  k.layers("n_layer", c.n_layer);
  k.positive("n_head", c.n_head);
  k.positive("n_inner", c.n_inner);
  k.divides("n_head", c.n_head, "n_embd", c.n_embd);
  k.positive("layer_norm_epsilon", c.layer_norm_epsilon);
  double C = double(c.n_embd);
  k.total((double(c.vocab_size) + double(c.n_positions)) * C + double(c.n_layer) * (4 * C * C + 2 * C * double(c.n_inner)));
}

void validate(const LlamaConfig& c, const std::string& source) {
  Checker k{source};
  k.positive("vocab_size", c.vocab_size);
  k.positive("hidden_size", c.hidden_size);
  k.positive("intermediate_size", c.intermediate_size);
  k.layers("num_hidden_layers", c.num_hidden_layers);
  k.positive("num_attention_heads", c.num_attention_heads);
  k.positive("num_key_value_heads", c.num_key_value_heads);
  k.positive("head_dim", c.head_dim);
  k.positive("max_position_embeddings", c.max_position_embeddings);
  k.divides("num_key_value_heads", c.num_key_value_heads, "num_attention_heads", c.num_attention_heads);
  if (c.head_dim % 2 != 0) k.fail("'head_dim' = " + std::to_string(c.head_dim) + " must be even for RoPE");
  k.positive("rms_norm_eps", c.rms_norm_eps);
  k.positive("rope_theta", c.rope_theta);
  k.total(2 * double(c.vocab_size) * double(c.hidden_size) + double(c.num_hidden_layers) * c.layer_weights());
}

ModelConfig load_config(const std::filesystem::path& path) {
  std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError("[config] cannot read " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), file.string());
}

}  // namespace forge
