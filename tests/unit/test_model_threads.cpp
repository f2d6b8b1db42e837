// One model used from several threads at once (forge/model.h, generate.h):
// four threads generate greedily from one GPT-2 and one Llama-family model,
// each with its own prompt and cache, and every sequence must equal the one
// the same prompt gives on a single thread; four threads render one chat
// template. On the CPU and on the one WebGPU device (there GPT-2 alone, three
// tokens, one round: a decode step on SwiftShader costs about 0.2 s of CPU).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forge/chat_template.h"
#include "forge/generate.h"
#include "forge/model.h"
#include "parity/parity.h"
#include "unit/on_threads.h"
#include "unit/this_build.h"

using namespace forge;

namespace {

constexpr int kThreads = 4;

void generate_on_threads(const Device& dev, const std::vector<const char*>& fixtures, int64_t tokens, int rounds) {
  for (const char* fixture : fixtures) {
    SCOPED_TRACE(fixture);
    const std::unique_ptr<CausalLM> model =
        load_model(std::string(forge::testing::test_data_dir()) + "/" + fixture, dev);
    GenerateOptions o;
    o.max_new_tokens = tokens;
    o.sample.temperature = 0;  // greedy: one answer per prompt
    std::vector<std::vector<uint32_t>> prompts, want;
    for (uint32_t t = 0; t < kThreads; ++t) {
      prompts.push_back({3 + 11 * t, 7 + t, 100 + 5 * t});
      want.push_back(generate(*model, prompts.back(), o));
      ASSERT_EQ(int64_t(want.back().size()), tokens);
    }
    const std::vector<std::string> failures = forge::testing::on_threads(kThreads, [&](int t) -> std::string {
      for (int r = 0; r < rounds; ++r)
        if (generate(*model, prompts[t], o) != want[t]) return "round " + std::to_string(r) + ": other ids";
      return "";
    });
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << dev.name() << ", thread " << t;
  }
}

}  // namespace

TEST(ModelThreads, GenerateFromFourThreadsOnTheCpu) {
  generate_on_threads(Device::cpu(), {"gpt2-tiny", "llama3-tiny"}, 12, 3);
}

TEST(ModelThreads, GenerateFromFourThreadsOnWebGpu) {
  generate_on_threads(forge::testing::gpu_device(), {"gpt2-tiny"}, 3, 1);
}

TEST(ModelThreads, TemplateRendersFromFourThreads) {
  const ChatTemplate tpl(
      "{% for m in messages %}{{ bos_token }}{{ m.role | upper }}: {{ m.content | trim }}\n{% endfor %}"
      "{% if add_generation_prompt %}ASSISTANT:{% endif %}",
      "<s>");
  std::vector<nlohmann::ordered_json> messages;
  std::vector<std::string> want;
  for (int t = 0; t < kThreads; ++t) {
    messages.push_back(nlohmann::ordered_json::array(
        {{{"role", "user"}, {"content", " thread " + std::to_string(t) + " "}}, {{"role", "assistant"}, {"content", "ok"}}}));
    want.push_back("<s>USER: thread " + std::to_string(t) + "\n<s>ASSISTANT: ok\nASSISTANT:");
    ASSERT_EQ(tpl.render(messages.back(), true), want.back());
  }
  const std::vector<std::string> failures = forge::testing::on_threads(kThreads, [&](int t) -> std::string {
    for (int r = 0; r < 50; ++r)
      if (tpl.render(messages[t], true) != want[t]) return "round " + std::to_string(r) + ": other text";
    return "";
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}
