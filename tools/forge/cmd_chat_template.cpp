// forge chat-template (--template-file F | --model DIR) --messages-file M.json
//   [--add-generation-prompt] [--bos-token S] [--eos-token S] [--define NAME=VALUE]... [--json]
// Renders a conversation with a chat template. A template that raises exits 1
// with its message on stderr.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "command.h"
#include "forge/chat_template.h"
#include "forge/error.h"
#include "text/tokenizer_spec.h"

namespace forge::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct ChatTemplateArgs {
  std::string template_file, model, messages_file;
  std::string bos, eos;
  bool bos_set = false, eos_set = false;
  std::vector<std::string> defines;
  bool add_generation_prompt = false;
  bool json = false;
};

// NAME=VALUE: VALUE as JSON when it parses (true, 3, "x", [1]), else as a string.
void add_define(ojson& extra, const std::string& item) {
  const std::size_t eq = item.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ValueError("[chat-template] --define '" + item + "' is not NAME=VALUE");
  }
  const std::string value = item.substr(eq + 1);
  ojson v = ojson::parse(value, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) v = value;
  extra[item.substr(0, eq)] = std::move(v);
}

void run(const ChatTemplateArgs& a) {
  ChatTemplate t = a.model.empty() ? ChatTemplate(text::read_text_file(a.template_file))
                                   : ChatTemplate::from_model_dir(a.model);
  std::optional<std::string> bos = a.bos_set ? std::optional<std::string>(a.bos) : t.bos_token();
  std::optional<std::string> eos = a.eos_set ? std::optional<std::string>(a.eos) : t.eos_token();
  if (a.bos_set || a.eos_set) t = ChatTemplate(t.source(), bos, eos);

  ojson messages;
  try {
    messages = ojson::parse(text::read_text_file(a.messages_file));
  } catch (const ojson::exception& e) {
    throw IoError("[chat-template] '" + a.messages_file + "' is not valid JSON: " + e.what());
  }
  if (!messages.is_array()) throw ValueError("[chat-template] '" + a.messages_file + "' must hold a JSON list of messages");
  ojson extra = ojson::object();
  for (const auto& d : a.defines) add_define(extra, d);

  const std::string text = t.render(messages, a.add_generation_prompt, extra);
  if (a.json) {
    std::cout << ojson{{"text", text}}.dump(-1, ' ', false, ojson::error_handler_t::replace) << "\n";
  } else {
    std::cout << text;
  }
}

const bool registered = register_command(
    {"chat-template", "Render a conversation (JSON list of messages) with a Jinja chat template",
     [](CLI::App& sub) {
       auto a = std::make_shared<ChatTemplateArgs>();
       auto* group = sub.add_option_group("template", "where the template is");
       group->add_option("--template-file", a->template_file, "A Jinja template file")->check(CLI::ExistingFile);
       group->add_option("-m,--model", a->model, "Model folder (tokenizer_config.json or chat_template.jinja)")
           ->check(CLI::ExistingDirectory);
       group->require_option(1);
       sub.add_option("--messages-file", a->messages_file, "JSON list of {\"role\", \"content\"} messages")
           ->required()
           ->check(CLI::ExistingFile);
       sub.add_flag("--add-generation-prompt", a->add_generation_prompt, "End with the assistant turn's header");
       may_be_empty(sub.add_option("--bos-token", a->bos, "bos_token (default: the model folder's, else undefined)"));
       may_be_empty(sub.add_option("--eos-token", a->eos, "eos_token (default: the model folder's, else undefined)"));
       sub.add_option("--define", a->defines, "Extra variable NAME=VALUE (VALUE as JSON when it parses)");
       sub.add_flag("--json", a->json, "Print {\"text\": ...}");
       sub.callback([a, &sub] {
         a->bos_set = sub.count("--bos-token") > 0;
         a->eos_set = sub.count("--eos-token") > 0;
         run(*a);
       });
     }});

}  // namespace
}  // namespace forge::cli
