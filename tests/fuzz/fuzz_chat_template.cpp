// libFuzzer target for the Jinja interpreter. Any input is a template: it must
// either render or be refused with forge::TemplateError; a crash, a sanitizer
// report, a hang or a memory blow-up is a finding. It renders over a small
// conversation with a tool call, so member access, loops and tojson get exercised.
#include <cstdint>
#include <memory>
#include <string>

#include "forge/chat_template.h"
#include "text/jinja/interp.h"
#include "text/jinja/parser.h"

namespace {

const nlohmann::ordered_json& messages() {
  static const nlohmann::ordered_json m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris? \u00e9\u4e2d"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
    {"role": "tool", "content": "{\"temp\": 21.5}"},
    {"role": "assistant", "content": "21.5 C"}
  ])");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace forge::text::jinja;
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const std::unique_ptr<Template> t = parse(source);
    auto globals = std::make_shared<Frame>();
    add_builtins(*globals);
    globals->set("messages", from_json(messages()));
    globals->set("add_generation_prompt", Value::boolean(true));
    globals->set("bos_token", Value::string("<s>"));
    globals->set("eos_token", Value::string("</s>"));
    globals->set("tools", Value::none());
    // A smaller step budget than renders get keeps each run fast; the limit
    // logic is the same.
    Interp interp(std::move(globals), 200'000);
    interp.render(*t);
  } catch (const forge::TemplateError&) {
  }
  return 0;
}
