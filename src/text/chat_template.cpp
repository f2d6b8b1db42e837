// forge::ChatTemplate: loading a model folder's template and rendering it with
// the variables transformers passes (messages, add_generation_prompt, the
// special tokens, tools and documents as None unless given, extra kwargs).
#include "forge/chat_template.h"

#include <filesystem>

#include "text/jinja/interp.h"
#include "text/jinja/parser.h"
#include "text/tokenizer_spec.h"

namespace forge {
namespace {

using ojson = nlohmann::ordered_json;

// A special token in tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_string(const ojson& cfg, const char* key) {
  const auto it = cfg.find(key);
  if (it == cfg.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    const auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, std::optional<std::string> bos_token,
                           std::optional<std::string> eos_token)
    : source_(source),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      parsed_(text::jinja::parse(source)) {}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

ChatTemplate ChatTemplate::from_model_dir(const std::string& dir_name) {
  const std::filesystem::path dir(dir_name);
  ojson cfg = ojson::object();
  const auto cfg_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(cfg_path)) {
    try {
      cfg = ojson::parse(text::read_text_file(cfg_path));
    } catch (const ojson::exception& e) {
      throw IoError("[chat-template] '" + cfg_path.string() + "' is not valid JSON: " + e.what());
    }
    if (!cfg.is_object()) throw IoError("[chat-template] '" + cfg_path.string() + "' is not a JSON object");
  }
  std::optional<std::string> source;
  // As in transformers, a chat_template.jinja file takes priority over the config's entry.
  const auto jinja_path = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path)) source = text::read_text_file(jinja_path);
  const auto ct = source ? cfg.end() : cfg.find("chat_template");
  if (ct != cfg.end() && ct->is_string()) {
    source = ct->get<std::string>();
  } else if (ct != cfg.end() && ct->is_array()) {
    // Several named templates: transformers' apply_chat_template takes "default".
    for (const auto& t : *ct) {
      if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string()) {
        source = t["template"].get<std::string>();
      }
    }
    if (!source) {
      throw IoError("[chat-template] '" + cfg_path.string() +
                    "' lists named chat templates but none is called \"default\"");
    }
  } else if (ct != cfg.end() && !ct->is_null()) {
    throw IoError("[chat-template] '" + cfg_path.string() + "': chat_template is neither a string nor a list");
  }
  if (!source) {
    throw IoError("[chat-template] '" + dir.string() +
                  "' has no chat template (no chat_template in tokenizer_config.json, no chat_template.jinja)");
  }
  return ChatTemplate(*source, token_string(cfg, "bos_token"), token_string(cfg, "eos_token"));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra) const {
  using namespace text::jinja;
  if (!extra.is_object() && !extra.is_null()) throw ValueError("[chat-template] extra variables must be a JSON object");
  auto globals = std::make_shared<Frame>();
  add_builtins(*globals);
  globals->set("messages", from_json(messages));
  globals->set("add_generation_prompt", Value::boolean(add_generation_prompt));
  globals->set("tools", Value::none());
  globals->set("documents", Value::none());
  if (bos_token_) globals->set("bos_token", Value::string(*bos_token_));
  if (eos_token_) globals->set("eos_token", Value::string(*eos_token_));
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) globals->set(k, from_json(v));
  }
  Interp interp(std::move(globals));
  return interp.render(*parsed_);
}

std::string render_chat_template(const std::string& template_source, const nlohmann::ordered_json& messages,
                                 bool add_generation_prompt, const std::optional<std::string>& bos_token,
                                 const std::optional<std::string>& eos_token, const nlohmann::ordered_json& extra) {
  return ChatTemplate(template_source, bos_token, eos_token).render(messages, add_generation_prompt, extra);
}

}  // namespace forge
