// The request layer of forge serve on its own: what OpenAI's fields parse to,
// and the 400 ApiError (naming the parameter) for each kind of bad value.
#include <gtest/gtest.h>

#include "serve/request.h"

using forge::serve::ApiError;
using forge::serve::parse_completion_request;

namespace {

// The param of the ApiError parsing `body` throws; "" when it throws none.
std::string rejected_param(const std::string& body, bool chat = false) {
  try {
    parse_completion_request(body, chat);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.body()["error"]["type"], "invalid_request_error") << body;
    return e.param.empty() ? "(none)" : e.param;
  }
  return "";
}

}  // namespace

TEST(ServeRequest, ParsesOpenAiFields) {
  auto r = parse_completion_request(
      R"({"model": "m", "prompt": "hi", "max_tokens": 5, "temperature": 0, "top_p": 0.5, "top_k": 3,
          "seed": 9, "stop": "x", "n": 2, "stream": true, "stream_options": {"include_usage": true}})",
      false);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(*r.prompt_text, "hi");
  EXPECT_EQ(*r.max_tokens, 5);
  EXPECT_EQ(r.temperature, 0.0f);
  EXPECT_EQ(r.top_p, 0.5f);
  EXPECT_EQ(r.top_k, 3);
  EXPECT_EQ(*r.seed, 9u);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream && r.include_usage);
  // Defaults as OpenAI's: temperature 1, no token limit given, one choice.
  auto d = parse_completion_request(R"({"prompt": [1, 2, 3]})", false);
  EXPECT_EQ(*d.prompt_ids, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(d.temperature, 1.0f);
  EXPECT_FALSE(d.max_tokens);
  EXPECT_EQ(d.n, 1);
  // A one-element batch of a prompt is that prompt.
  EXPECT_EQ(*parse_completion_request(R"({"prompt": [[4, 5]]})", false).prompt_ids, (std::vector<uint32_t>{4, 5}));
  // Chat content as text parts; max_completion_tokens as max_tokens.
  auto c = parse_completion_request(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
          "max_completion_tokens": 7})",
      true);
  EXPECT_EQ(c.messages[0]["content"], "ab");
  EXPECT_EQ(*c.max_tokens, 7);
}

// An empty prompt, however it is written, is called empty (not "an array").
TEST(ServeRequest, EmptyPromptsAreCalledEmpty) {
  for (const char* body : {R"({"prompt": ""})", R"({"prompt": []})", R"({"prompt": [[]]})", R"({"prompt": [""]})"}) {
    try {
      parse_completion_request(body, false);
      ADD_FAILURE() << body << " was accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.param, "prompt") << body;
      EXPECT_EQ(e.body()["error"]["message"], "'prompt' is empty") << body;
    }
  }
}

TEST(ServeRequest, BadValuesNameTheirParameter) {
  EXPECT_EQ(rejected_param("{"), "(none)");
  EXPECT_EQ(rejected_param("3"), "(none)");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "max_tokens": 9e999})"), "(none)");  // past double: not valid JSON
  EXPECT_EQ(rejected_param(R"({})"), "prompt");
  EXPECT_EQ(rejected_param(R"({"prompt": ["a", "b"]})"), "prompt");
  EXPECT_EQ(rejected_param(R"({"prompt": [1, -2]})"), "prompt");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "temperature": 2.5})"), "temperature");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "temperature": null})"), "");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "top_p": 1.5})"), "top_p");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "n": 17})"), "n");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "n": 0})"), "n");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "seed": "x"})"), "seed");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "stop": [""]})"), "stop");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "stop": 3})"), "stop");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "stream_options": {"include_usage": true}})"), "stream_options");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "logprobs": 2})"), "logprobs");
  EXPECT_EQ(rejected_param(R"({"prompt": "a", "model": 3})"), "model");
  EXPECT_EQ(rejected_param(R"({"messages": []})", true), "messages");
  EXPECT_EQ(rejected_param(R"({"messages": [3]})", true), "messages[0]");
  EXPECT_EQ(rejected_param(R"({"messages": [{"role": "user", "content": 3}]})", true), "messages[0].content");
  // A part whose type is not a string was a JSON library error (a 500).
  for (const char* part : {R"({"type": 3})", R"({"type": null, "text": "a"})", R"({"type": "text", "text": 3})",
                           R"({"type": "image_url"})", R"("text")"})
    EXPECT_EQ(rejected_param(R"({"messages": [{"role": "user", "content": [)" + std::string(part) + "]}]}", true),
              "messages[0].content")
        << part;
}
