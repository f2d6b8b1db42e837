// Model-folder metadata: tokenizer_config.json names the special tokens and
// BOS / EOS; config.json may carry bos_token_id / eos_token_id.
#include <algorithm>

#include "text/tokenizer_spec.h"

namespace forge::text {

namespace {

using nlohmann::json;

// "bos_token": "<s>" or {"content": "<s>", ...}; nullopt for null or absent.
std::optional<std::string> token_name(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<std::uint32_t> id_of(const TokenizerSpec& spec, const std::string& name) {
  for (const auto& t : spec.added) {
    if (t.content == name) return t.id;
  }
  auto it = spec.bpe.vocab.find(name);
  if (it != spec.bpe.vocab.end()) return it->second;
  return std::nullopt;
}

// Makes `name` a special added token when the vocab has it and it is not one yet.
void mark_special(TokenizerSpec& spec, const std::string& name) {
  auto added = std::find_if(spec.added.begin(), spec.added.end(),
                            [&](const AddedToken& t) { return t.content == name; });
  if (added != spec.added.end()) return;
  auto it = spec.bpe.vocab.find(name);
  if (it != spec.bpe.vocab.end()) spec.added.push_back(AddedToken{name, it->second, true});
}

std::optional<std::uint32_t> config_id(const json& config, const char* key, const std::string& source) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_number_unsigned()) return json_token_id(*it, source, key);
  if (it->is_array() && !it->empty() && (*it)[0].is_number_unsigned()) {
    return json_token_id((*it)[0], source, key);  // several EOS ids: the first
  }
  return std::nullopt;
}

}  // namespace

void apply_model_metadata(TokenizerSpec& spec, const std::filesystem::path& dir) {
  const auto tok_config = dir / "tokenizer_config.json";
  if (std::filesystem::exists(tok_config)) {
    const json config = read_json_file(tok_config);
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
      if (auto name = token_name(config, key)) mark_special(spec, *name);
    }
    if (auto extra = config.find("additional_special_tokens");
        extra != config.end() && extra->is_array()) {
      for (const auto& t : *extra) {
        if (t.is_string()) mark_special(spec, t.get<std::string>());
      }
    }
    if (auto name = token_name(config, "bos_token")) spec.bos = id_of(spec, *name);
    if (auto name = token_name(config, "eos_token")) spec.eos = id_of(spec, *name);
  }
  const auto model_config = dir / "config.json";
  if (std::filesystem::exists(model_config)) {
    const json config = read_json_file(model_config);
    if (config.is_object()) {
      const std::string source = "'" + model_config.string() + "'";
      if (!spec.bos) spec.bos = config_id(config, "bos_token_id", source);
      if (!spec.eos) spec.eos = config_id(config, "eos_token_id", source);
    }
  }
}

}  // namespace forge::text
