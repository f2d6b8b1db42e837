// Chat templates: the Jinja programs that tokenizer_config.json ships to turn a
// conversation into the prompt text a model was trained on. forge renders them
// with its own Jinja interpreter (src/text/jinja; Debian packages no C++ Jinja
// engine that covers what released templates use) the way Hugging Face
// transformers does: trim_blocks and lstrip_blocks on, jinja2's default
// Undefined, `raise_exception`, `strftime_now`, and a `tojson` equal to Python's
// json.dumps(ensure_ascii=False).
//
//   auto t = forge::ChatTemplate::from_model_dir("models/SmolLM2-135M-Instruct");
//   std::string prompt = t.render(messages, /*add_generation_prompt=*/true);
//
// Threads: render may run from several threads at once on one ChatTemplate
// (the parsed program is read-only; each call evaluates in its own frames).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "forge/error.h"

namespace forge {

// A template that raised (what() is exactly its raise_exception message), or
// one that cannot be parsed or evaluated (what() names the construct and the
// template line: "[chat-template] line 3: unknown filter 'foo'").
class TemplateError : public Error {
 public:
  using Error::Error;
};

namespace text::jinja {
struct Template;
}

class ChatTemplate {
 public:
  // Parses `source` once; throws TemplateError on a syntax error.
  explicit ChatTemplate(const std::string& source, std::optional<std::string> bos_token = std::nullopt,
                        std::optional<std::string> eos_token = std::nullopt);
  // The template of a model folder: chat_template.jinja, else
  // tokenizer_config.json "chat_template" (a string, or a list of {"name",
  // "template"} where "default" is taken), the order transformers uses;
  // bos/eos tokens from tokenizer_config.json (strings or {"content": ...}
  // objects). Throws IoError when the folder has no template.
  static ChatTemplate from_model_dir(const std::string& dir);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // messages: a JSON list of {"role", "content", ...}; `extra` (a JSON object)
  // adds or overrides variables (tools, date_string, enable_thinking...). Key
  // order of objects is kept, as tojson must print them in document order.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;

  const std::string& source() const { return source_; }
  const std::optional<std::string>& bos_token() const { return bos_token_; }
  const std::optional<std::string>& eos_token() const { return eos_token_; }

 private:
  std::string source_;
  std::optional<std::string> bos_token_, eos_token_;
  std::unique_ptr<text::jinja::Template> parsed_;
};

// One-shot form of ChatTemplate(template, bos, eos).render(...).
std::string render_chat_template(const std::string& template_source,
                                 const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const std::optional<std::string>& bos_token = std::nullopt,
                                 const std::optional<std::string>& eos_token = std::nullopt,
                                 const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

}  // namespace forge
