#include "chat_prompt.h"

#include <algorithm>
#include <fstream>

#include "forge/error.h"
#include "text/tokenizer_spec.h"
#include "train_data.h"

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
  if (!has) {
    const std::string instead = who == "generate" ? "leave out --chat"
                                : who == "train"  ? "train it on {\"text\"} lines instead of conversations"
                                                  : "use forge generate";
    throw IoError("[" + who + "] " + model_name +
                  " has no chat template (tokenizer_config.json chat_template or chat_template.jinja); " + instead);
  }
  return ChatTemplate::from_model_dir(dir.string());
}

std::vector<uint32_t> encode_rendered(const Tokenizer& tok, const std::string& rendered) {
  return tok.encode(rendered, /*add_special_tokens=*/false);
}

std::vector<uint32_t> encode_chat_for_training(const Tokenizer& tok, const ChatTemplate& tmpl,
                                               const nlohmann::ordered_json& messages) {
  const std::string full = tmpl.render(messages, false);
  std::vector<uint32_t> out;
  auto put = [&](size_t from, size_t to, bool loss) {
    if (to <= from) return;
    for (uint32_t id : encode_rendered(tok, full.substr(from, to - from))) out.push_back(loss ? id : id | kNoLoss);
  };
  size_t at = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].value("role", "") != "assistant") continue;
    nlohmann::ordered_json before = nlohmann::ordered_json::array(), upto;
    for (size_t k = 0; k < i; ++k) before.push_back(messages[k]);
    upto = before;
    upto.push_back(messages[i]);
    const std::string start = tmpl.render(before, true), end = tmpl.render(upto, false);
    if (!full.starts_with(end) || !end.starts_with(start) || start.size() < at)
      throw ValueError("[train] the chat template does not render this conversation as the prefixes of its "
                       "continuations, so the assistant's tokens cannot be told apart");
    put(at, start.size(), false);
    put(start.size(), end.size(), true);
    at = end.size();
  }
  put(at, full.size(), false);
  return out;
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
  const ojson m = ojson::parse(text::read_text_file(path, who), nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded()) throw ValueError("[" + who + "] --messages " + path + " is not valid JSON");
  if (!m.is_array() || m.empty())
    throw ValueError("[" + who + "] --messages " + path + " must hold a non-empty JSON list of {\"role\", \"content\"}");
  for (const ojson& x : m)
    if (!x.is_object() || !x.contains("role") || !x["role"].is_string())
      throw ValueError("[" + who + "] --messages " + path + ": every message needs a string \"role\"");
  return m;
}

}  // namespace forge::cli
