// PEFT adapter folders without a model (models/lora_files.h): the config's
// fields and every tensor's key, dtype and shape.
#include "models/lora_files.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "forge/safetensors.h"
#include "io/config_reader.h"
#include "io/json_strict.h"

namespace forge {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "base_model.model.";
std::string S(int64_t v) { return std::to_string(v); }
}  // namespace

double LoraConfig::scaling() const {
  return rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank);
}

LoraConfig read_adapter_config(const fs::path& dir) {
  const fs::path path = dir / "adapter_config.json";
  if (!fs::is_regular_file(path))
    throw IoError("[lora] no adapter_config.json in '" + dir.string() + "' (a PEFT LoRA adapter folder holds "
                  "adapter_config.json and adapter_model.safetensors)");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw IoError("[lora] cannot read '" + path.string() + "'");
  const nlohmann::json j = io::parse_json_strict(text.str(), "lora", path.string());
  if (!j.is_object()) throw IoError("[lora] '" + path.string() + "' is not a JSON object");
  // Typed reads: a wrong JSON type is an IoError naming the key, a float
  // where an integer belongs ("r": 2.5, 1e30) is refused, never truncated.
  const io::ConfigReader r(j, path.string());
  const std::string where = " in " + path.string();
  if (auto t = r.opt_string("peft_type"); t && *t != "LORA")
    throw ValueError("[lora] peft_type '" + *t + "'" + where + ": forge reads LoRA adapters");
  LoraConfig c;
  if (!r.has("r")) throw ValueError("[lora] no 'r'" + where);
  c.rank = r.integer("r");
  c.alpha = r.opt_number("lora_alpha").value_or(8.0);  // PEFT's default
  c.rslora = r.opt_boolean("use_rslora").value_or(false);
  if (!r.has("target_modules")) throw ValueError("[lora] no 'target_modules'" + where);
  const nlohmann::json& t = r.at("target_modules");
  if (!t.is_array())
    throw ValueError("[lora] target_modules" + where + " is " + t.dump() +
                     "; forge reads a list of module names (a regular expression is not supported)");
  c.targets.clear();
  for (const nlohmann::json& m : t) {
    if (!m.is_string()) throw IoError("[lora] target_modules" + where + " holds " + m.dump() + ", not a module name");
    c.targets.push_back(m.get<std::string>());
  }
  if (r.opt_boolean("use_dora").value_or(false)) throw ValueError("[lora] use_dora" + where + " (DoRA) is not supported");
  c.fan_in_fan_out = r.opt_boolean("fan_in_fan_out").value_or(false);  // checked against the model on load
  if (auto b = r.opt_string("bias"); b && *b != "none")
    throw ValueError("[lora] bias '" + *b + "'" + where + ": forge trains no biases (only 'none')");
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    if (r.has(key) && !r.at(key).empty())
      throw ValueError(std::string("[lora] ") + key + where + " (per-module settings) is not supported");
  for (const char* key : {"layers_to_transform", "modules_to_save"})
    if (r.has(key) && !r.at(key).empty()) throw ValueError(std::string("[lora] ") + key + where + " is not supported");
  if (c.rank < 1) throw ValueError("[lora] r " + S(c.rank) + where + " must be at least 1");
  return c;
}

namespace lora {

std::string short_name(const std::string& module) { return module.substr(module.rfind('.') + 1); }

bool targeted(const LoraConfig& c, const std::string& module) {
  const std::string s = short_name(module);
  return std::find(c.targets.begin(), c.targets.end(), s) != c.targets.end();
}

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

std::vector<ModuleWeights> read_adapter_weights(const fs::path& dir, const LoraConfig& c,
                                                const std::vector<Module>& modules) {
  std::vector<std::string> available;
  for (const Module& m : modules)
    if (std::find(available.begin(), available.end(), short_name(m.name)) == available.end())
      available.push_back(short_name(m.name));
  check_config(c, available, " in " + (dir / "adapter_config.json").string());
  const fs::path file = dir / "adapter_model.safetensors";
  if (!fs::is_regular_file(file))
    throw IoError("[lora] no adapter_model.safetensors in '" + dir.string() + "'" +
                  (fs::exists(dir / "adapter_model.bin") ? " (adapter_model.bin, a pickle, is not read)" : ""));
  const SafetensorsFile st = SafetensorsFile::open(file);
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < modules.size(); ++i)
    if (targeted(c, modules[i].name)) {
      by_key[kPrefix + modules[i].name + ".lora_A.weight"] = i;
      by_key[kPrefix + modules[i].name + ".lora_B.weight"] = i;
    }
  for (const TensorInfo& t : st.tensors())
    if (!by_key.count(t.name))
      throw ValueError("[lora] " + file.string() + " holds '" + t.name + "', which is no LoRA weight of a targeted "
                       "module of this model (an adapter for another base?)");
  std::vector<ModuleWeights> out;
  for (size_t i = 0; i < modules.size(); ++i) {
    const Module& m = modules[i];
    if (!targeted(c, m.name)) continue;
    ModuleWeights w;
    w.module = i;
    for (const bool is_a : {true, false}) {
      const std::string key = kPrefix + m.name + (is_a ? ".lora_A.weight" : ".lora_B.weight");
      if (!st.contains(key)) throw ValueError("[lora] " + file.string() + " has no '" + key + "'");
      TensorView v = st.get(key);
      const Shape want = is_a ? Shape{c.rank, m.in} : Shape{m.out, c.rank};
      if (v.shape() != want)
        throw ShapeError("[lora] '" + key + "' in " + file.string() + " is " + shape_str(v.shape()) + "; this model (r " +
                         S(c.rank) + ") needs " + shape_str(want) + " (an adapter for another base?)");
      (is_a ? w.a : w.b) = v.to_f32();
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace lora
}  // namespace forge
