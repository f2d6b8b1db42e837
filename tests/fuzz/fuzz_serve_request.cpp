// libFuzzer target for the body of POST /v1/completions and
// /v1/chat/completions (serve/request.h), parsed for both endpoints. Each
// parse must either refuse the body with an ApiError 400 whose JSON answer
// serializes as the server sends it, or give a request inside the documented ranges: one non-empty
// prompt (completions) or a non-empty list of {role, content} strings
// (chat), temperature in [0, 2], top_p in (0, 1], top_k and max_tokens in
// [0, 2^30], n in [1, 16], at most 4 non-empty stop strings, usage only when
// streamed. Anything else (another exception, a sanitizer report) is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "serve/request.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_serve_request: invariant failed: %s\n", what);
    std::abort();
  }
}

void parse(const std::string& body, bool chat) {
  forge::serve::CompletionRequest r;
  try {
    r = forge::serve::parse_completion_request(body, chat);
  } catch (const forge::serve::ApiError& e) {
    check(e.status == 400, "a refused body is a 400");
    // As the server sends it: a message may quote ill-formed UTF-8 of the body.
    check(!e.body().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).empty(), "the error answer serializes");
    return;
  }
  check(r.chat == chat, "the endpoint is kept");
  if (chat) {
    check(r.messages.is_array() && !r.messages.empty(), "chat has messages");
    for (const auto& m : r.messages) check(m["role"].is_string() && m["content"].is_string(), "messages are strings");
  } else {
    check(r.prompt_text.has_value() != r.prompt_ids.has_value(), "exactly one prompt form");
    check(r.prompt_text ? !r.prompt_text->empty() : !r.prompt_ids->empty(), "the prompt is not empty");
  }
  check(r.temperature >= 0 && r.temperature <= 2, "temperature in [0, 2]");
  check(r.top_p > 0 && r.top_p <= 1, "top_p in (0, 1]");
  check(r.top_k >= 0 && r.top_k <= (int64_t(1) << 30), "top_k in [0, 2^30]");
  check(!r.max_tokens || (*r.max_tokens >= 0 && *r.max_tokens <= (int64_t(1) << 30)), "max_tokens in [0, 2^30]");
  check(r.n >= 1 && r.n <= 16, "n in [1, 16]");
  check(r.stop.size() <= 4, "at most 4 stop strings");
  for (const auto& s : r.stop) check(!s.empty(), "stop strings are not empty");
  check(!r.include_usage || r.stream, "usage only when streamed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  parse(body, false);
  parse(body, true);
  return 0;
}
