// Released Llama-family shapes by short name (the numbers of their config.json).
#include <map>
#include <nlohmann/json.hpp>

#include "forge/model.h"

namespace forge {

ModelConfig model_preset(const std::string& name) {
  using json = nlohmann::json;
  const json llama3_scaling = {{"rope_type", "llama3"},
                               {"factor", 32.0},
                               {"low_freq_factor", 1.0},
                               {"high_freq_factor", 4.0},
                               {"original_max_position_embeddings", 8192}};
  static const std::map<std::string, json> presets = {
      {"smollm2-135m",
       {{"model_type", "llama"}, {"hidden_size", 576}, {"intermediate_size", 1536}, {"num_hidden_layers", 30},
        {"num_attention_heads", 9}, {"num_key_value_heads", 3}, {"vocab_size", 49152}, {"rope_theta", 100000.0},
        {"tie_word_embeddings", true}, {"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-5},
        {"bos_token_id", 1}, {"eos_token_id", 2}}},
      {"smollm2-360m",
       {{"model_type", "llama"}, {"hidden_size", 960}, {"intermediate_size", 2560}, {"num_hidden_layers", 32},
        {"num_attention_heads", 15}, {"num_key_value_heads", 5}, {"vocab_size", 49152}, {"rope_theta", 100000.0},
        {"tie_word_embeddings", true}, {"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-5},
        {"bos_token_id", 1}, {"eos_token_id", 2}}},
      {"qwen2.5-0.5b",
       {{"model_type", "qwen2"}, {"hidden_size", 896}, {"intermediate_size", 4864}, {"num_hidden_layers", 24},
        {"num_attention_heads", 14}, {"num_key_value_heads", 2}, {"vocab_size", 151936}, {"rope_theta", 1000000.0},
        {"tie_word_embeddings", true}, {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},
        {"bos_token_id", 151643}, {"eos_token_id", 151643}}},
      {"llama3.2-1b",
       {{"model_type", "llama"}, {"hidden_size", 2048}, {"intermediate_size", 8192}, {"num_hidden_layers", 16},
        {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"vocab_size", 128256}, {"rope_theta", 500000.0},
        {"tie_word_embeddings", true}, {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5},
        {"rope_scaling", llama3_scaling}, {"bos_token_id", 128000}, {"eos_token_id", 128001}}},
      {"tinyllama-1.1b",
       {{"model_type", "llama"}, {"hidden_size", 2048}, {"intermediate_size", 5632}, {"num_hidden_layers", 22},
        {"num_attention_heads", 32}, {"num_key_value_heads", 4}, {"vocab_size", 32000}, {"rope_theta", 10000.0},
        {"tie_word_embeddings", false}, {"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-5},
        {"bos_token_id", 1}, {"eos_token_id", 2}}},
  };
  auto it = presets.find(name);
  if (it == presets.end()) {
    std::string names;
    for (const auto& [k, v] : presets) names += (names.empty() ? "" : ", ") + k;
    throw ValueError("[model] unknown preset '" + name + "' (known: " + names + ")");
  }
  return parse_config(it->second.dump(), "preset " + name);
}

}  // namespace forge
