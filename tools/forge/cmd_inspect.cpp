// forge inspect FILE_OR_DIR | -m MODEL [--json] [--dtype f32|bf16]: tensors, config, architecture, metadata and
// parameter count of a safetensors file or a model directory. A file of
// tensors that is no model (forge eval's logits, a checkpoint's optimizer
// state) is named for what it is and counted in elements, not parameters.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "command.h"
#include "model_arg.h"
#include "forge/model_config.h"
#include "forge/safetensors.h"

namespace forge::cli {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json config_json(const ModelConfig& m) {
  json j;
  if (m.arch == Arch::Gpt2) {
    const Gpt2Config& c = m.gpt2();
    j = {{"vocab_size", c.vocab_size}, {"n_positions", c.n_positions}, {"n_embd", c.n_embd},
         {"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_inner", c.n_inner},
         {"layer_norm_epsilon", c.layer_norm_epsilon}, {"activation_function", c.activation_function},
         {"tie_word_embeddings", c.tie_word_embeddings}};
  } else {
    const LlamaConfig& c = m.llama();
    j = {{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
         {"intermediate_size", c.intermediate_size}, {"num_hidden_layers", c.num_hidden_layers},
         {"num_attention_heads", c.num_attention_heads}, {"num_key_value_heads", c.num_key_value_heads},
         {"head_dim", c.head_dim}, {"max_position_embeddings", c.max_position_embeddings},
         {"rms_norm_eps", c.rms_norm_eps}, {"rope_theta", c.rope_theta}, {"hidden_act", c.hidden_act},
         {"tie_word_embeddings", c.tie_word_embeddings}};
    if (c.rope_scaling)
      j["rope_scaling"] = {{"type", c.rope_scaling->type}, {"factor", c.rope_scaling->factor}};
  }
  j["model_type"] = m.arch == Arch::Gpt2 ? std::string("gpt2") : m.llama().model_type;
  j["architectures"] = {m.architecture};
  if (m.arch == Arch::Llama) {
    const LlamaConfig& c = m.llama();
    if (c.has_bias_q()) j["qkv_bias"] = true;
    if (!c.layer_window.empty()) j["layer_window"] = c.layer_window;
  }
  if (m.quantization) {
    j["quantization"] = {{"group_size", m.quantization->group_size}, {"bits", m.quantization->bits}};
    for (const auto& [path, spec] : m.quantization->overrides)
      j["quantization"][path] = spec ? json{{"group_size", spec->group_size}, {"bits", spec->bits}} : json(false);
  }
  if (m.bos_token_id) j["bos_token_id"] = *m.bos_token_id;
  if (!m.eos_token_ids.empty()) j["eos_token_id"] = m.eos_token_ids;
  return j;
}

// What a file of tensors without a known model's names holds.
std::string not_a_model(const std::vector<TensorInfo>& tensors) {
  bool moments = !tensors.empty();
  std::string names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    moments = moments && (tensors[i].name.starts_with("m.") || tensors[i].name.starts_with("v."));
    if (i < 4) names += (i ? ", " : "") + tensors[i].name;
  }
  if (tensors.size() > 4) names += ", ...";
  if (moments) return "optimizer state (AdamW moments of a training checkpoint), not a model";
  return "tensors (" + names + "), not a model: no config.json and no known model's tensor names";
}

// Whether loading with --dtype bf16 holds this tensor in 16 bits: the
// projections' weights (rank-2 ".weight"), not the token and position tables
// nor an untied LM head, which stay f32 (Linear::load, Embedding::load).
bool bf16_on_device(const TensorInfo& t) {
  if (t.shape.size() != 2 || !t.name.ends_with(".weight")) return false;
  for (const char* table : {"embed_tokens.", "lm_head.", "wte.", "wpe."})
    if (t.name.find(table) != std::string::npos) return false;
  return true;
}

json inspect(const fs::path& path, bool bf16) {
  if (fs::is_directory(path) && !fs::exists(path / "model.safetensors") &&
      !fs::exists(path / "model.safetensors.index.json"))
    check_model_dir(path.string(), "inspect");  // says what the folder is instead
  Checkpoint ck = Checkpoint::open(path);
  std::vector<TensorInfo> tensors = ck.tensors();
  json out;
  out["path"] = path.string();
  out["shards"] = ck.shards().size();
  out["metadata"] = ck.metadata();
  uint64_t bytes = 0;
  int64_t elements = 0;
  out["tensors"] = json::array();
  for (const TensorInfo& t : tensors) {
    out["tensors"].push_back(
        {{"name", t.name}, {"dtype", st_dtype_name(t.dtype)}, {"shape", t.shape}, {"bytes", t.nbytes()}});
    bytes += t.nbytes();
    elements += numel(t.shape);
  }
  out["bytes"] = bytes;
  out["elements"] = elements;
  out["kind"] = "model";

  if (fs::is_directory(path) && fs::exists(path / "config.json")) {
    ModelConfig cfg = load_config(path);
    WeightLayout layout = check_weights(cfg, tensors, path.string());
    out["config"] = config_json(cfg);
    out["architecture"] = arch_name(layout.arch);
    out["architecture_from"] = "config.json";
    out["prefix"] = layout.prefix;
    out["tied_embeddings"] = layout.tied_embeddings;
    out["quantized"] = layout.quantized;
    out["parameters"] = layout.parameters;
    out["unused_tensors"] = layout.unused;
    // What loading puts on the device: packed words and their scales as
    // stored, dense floats widened to f32 (or with --dtype bf16 the
    // projections' weights in 16 bits).
    uint64_t device = 0;
    std::set<std::string> unused(layout.unused.begin(), layout.unused.end());
    for (const TensorInfo& t : tensors) {
      if (unused.count(t.name)) continue;
      const bool packed = t.dtype == StDType::U32 || t.name.ends_with(".scales") || t.name.ends_with(".biases");
      device += packed ? t.nbytes() : uint64_t(numel(t.shape)) * (bf16 && bf16_on_device(t) ? 2 : 4);
    }
    out["device_bytes"] = device;
    out["device_dtype"] = bf16 ? "bf16" : "f32";
  } else if (auto arch = guess_arch(tensors)) {
    out["architecture"] = arch_name(*arch);
    out["architecture_from"] = "tensor names";
    out["parameters"] = elements;  // without a config: every stored element
  } else {
    out["architecture"] = nullptr;
    out["kind"] = "tensors";
    out["description"] = not_a_model(tensors);
  }
  return out;
}

std::string shape_text(const json& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i].get<int64_t>());
  return s + "]";
}

void print_text(const json& r) {
  std::printf("path: %s (%zu shard%s)\n", r["path"].get<std::string>().c_str(), r["shards"].get<size_t>(),
              r["shards"].get<size_t>() == 1 ? "" : "s");
  if (r["kind"] == "tensors") {
    std::printf("kind: %s\n", r["description"].get<std::string>().c_str());
  } else {
    std::printf("architecture: %s (from %s)\n", r["architecture"].get<std::string>().c_str(),
                r["architecture_from"].get<std::string>().c_str());
  }
  if (r.contains("config")) {
    std::printf("config:\n");
    for (const auto& [k, v] : r["config"].items()) std::printf("  %s: %s\n", k.c_str(), v.dump().c_str());
    std::printf("layout: prefix '%s', %s embeddings%s; %.1f MB on the device (--dtype %s)\n", r["prefix"].get<std::string>().c_str(),
                r["tied_embeddings"].get<bool>() ? "tied" : "untied",
                r["quantized"].get<bool>() ? ", quantized" : "", double(r["device_bytes"].get<uint64_t>()) / 1e6,
                r["device_dtype"].get<std::string>().c_str());
    for (const auto& u : r["unused_tensors"]) std::printf("  unused tensor: %s\n", u.get<std::string>().c_str());
  }
  std::printf("metadata:\n");
  for (const auto& [k, v] : r["metadata"].items()) std::printf("  %s: %s\n", k.c_str(), v.get<std::string>().c_str());
  std::printf("tensors: %zu\n", r["tensors"].size());
  for (const auto& t : r["tensors"])
    std::printf("  %-52s %-5s %-16s %10llu bytes\n", t["name"].get<std::string>().c_str(),
                t["dtype"].get<std::string>().c_str(), shape_text(t["shape"]).c_str(),
                static_cast<unsigned long long>(t["bytes"].get<uint64_t>()));
  const bool model = r.contains("parameters");
  std::printf("total: %llu bytes, %lld %s\n", static_cast<unsigned long long>(r["bytes"].get<uint64_t>()),
              static_cast<long long>(r[model ? "parameters" : "elements"].get<int64_t>()),
              model ? "parameters" : "elements");
}

const bool registered = register_command(
    {"inspect", "List the tensors, config and architecture of a .safetensors file or model directory",
     [](CLI::App& sub) {
       auto path = std::make_shared<std::string>();
       auto as_json = std::make_shared<bool>(false);
       auto dtype = std::make_shared<std::string>("f32");
       auto model = std::make_shared<std::string>();
       CLI::Option* positional =
           sub.add_option("path", *path, "A .safetensors file, an index .json or a model directory");
       // -m as every other model-taking command spells it (a folder or a Hugging Face id).
       sub.add_option("-m,--model", *model, "Model folder, or a Hugging Face id org/name[@revision] (instead of PATH)")
           ->excludes(positional);
       sub.add_flag("--json", *as_json, "Print JSON");
       add_dtype_option(sub, *dtype);
       sub.callback([path, model, as_json, dtype] {
         if (path->empty() && model->empty()) throw UsageError("inspect needs a PATH or --model DIR");
         const std::string target = model->empty() ? *path : model_folder(*model).string();
         json r = inspect(target, weights_dtype(*dtype) == DType::BF16);
         if (*as_json)
           std::cout << r.dump(2) << "\n";
         else
           print_text(r);
       });
     }});

}  // namespace
}  // namespace forge::cli
