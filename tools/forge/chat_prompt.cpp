#include "chat_prompt.h"

#include <algorithm>
#include <fstream>

#include "forge/error.h"

namespace forge::cli {

using ojson = nlohmann::ordered_json;

ChatTemplate load_chat_template(const std::filesystem::path& dir, const std::string& model_name,
                                const std::string& who) {
  bool has = std::filesystem::exists(dir / "chat_template.jinja");
  if (!has && std::filesystem::exists(dir / "tokenizer_config.json")) {
    std::ifstream in(dir / "tokenizer_config.json");
    const ojson cfg = ojson::parse(in, nullptr, /*allow_exceptions=*/false);
    has = cfg.is_object() && cfg.contains("chat_template") && !cfg["chat_template"].is_null();
  }
  if (!has)
    throw IoError("[" + who + "] " + model_name +
                  " has no chat template (tokenizer_config.json chat_template or chat_template.jinja); use forge "
                  "generate");
  return ChatTemplate::from_model_dir(dir.string());
}

std::vector<uint32_t> encode_rendered(const Tokenizer& tok, const std::string& rendered) {
  return tok.encode(rendered, /*add_special_tokens=*/false);
}

std::vector<uint32_t> chat_stop_ids(const CausalLM& model, const Tokenizer& tok, const ChatTemplate& tmpl) {
  std::vector<uint32_t> ids = model.info().eos;
  auto add = [&](std::optional<uint32_t> id) {
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  };
  add(tok.eos_id());
  if (tmpl.eos_token()) add(tok.token_id(*tmpl.eos_token()));
  for (const char* t : {"<|im_end|>", "<|eot_id|>", "<|end|>", "</s>", "<end_of_turn>"})
    if (auto id = tok.token_id(t); id && tok.is_special(*id)) add(id);
  // The token right after an assistant message in a rendered probe
  // conversation is the one the template closes assistant turns with.
  const std::string marker = "forge probe reply";
  try {
    const ojson probe = ojson::array({{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}, {"content", marker}}});
    const std::string text = tmpl.render(probe, false);
    if (size_t at = text.rfind(marker); at != std::string::npos) {
      const std::vector<uint32_t> after = tok.encode(text.substr(at + marker.size()), false);
      if (!after.empty() && tok.is_special(after[0])) add(after[0]);
    }
  } catch (const Error&) {
    // A template that refuses the probe (it wants a system turn, say) still has the ids above.
  }
  return ids;
}

ojson read_messages(const std::string& path, const std::string& who) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path)) throw IoError("[" + who + "] cannot read --messages " + path);
  const ojson m = ojson::parse(in, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded()) throw ValueError("[" + who + "] --messages " + path + " is not valid JSON");
  if (!m.is_array() || m.empty())
    throw ValueError("[" + who + "] --messages " + path + " must hold a non-empty JSON list of {\"role\", \"content\"}");
  for (const ojson& x : m)
    if (!x.is_object() || !x.contains("role") || !x["role"].is_string())
      throw ValueError("[" + who + "] --messages " + path + ": every message needs a string \"role\"");
  return m;
}

}  // namespace forge::cli
