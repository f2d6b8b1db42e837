// The body of POST /v1/completions and /v1/chat/completions, parsed and
// checked: a wrong type or an out-of-range value is an ApiError 400 that
// names the parameter, as OpenAI answers.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/api_error.h"

namespace forge::serve {

struct CompletionRequest {
  bool chat = false;
  std::string model;
  // completions: the prompt as text or as ids (exactly one is set).
  std::optional<std::string> prompt_text;
  std::optional<std::vector<uint32_t>> prompt_ids;
  nlohmann::ordered_json messages;        // chat: [{role, content}, ...]
  std::optional<int64_t> max_tokens;      // unset: the endpoint's default
  float temperature = 1.0f;               // 0: greedy
  float top_p = 1.0f;                     // (0, 1]
  int64_t top_k = 0;                      // 0: off
  std::optional<uint64_t> seed;           // unset: a random one per request
  std::vector<std::string> stop;          // at most 4, none empty
  int64_t n = 1;                          // choices, 1 .. 16
  bool stream = false;
  bool include_usage = false;             // stream_options.include_usage
  bool echo = false;                      // completions: the prompt text before the completion
};

// Parses `body` (the raw request text); `chat` picks the endpoint's fields.
CompletionRequest parse_completion_request(const std::string& body, bool chat);

}  // namespace forge::serve
