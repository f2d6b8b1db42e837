// What the routes of `forge serve` share: the model and its tokenizer, chat
// template and stop ids, the scheduler, the metrics, and turning an OpenAI
// request into scheduler jobs and their tokens back into OpenAI JSON.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "forge/chat_template.h"
#include "forge/model.h"
#include "forge/tokenizer.h"
#include "gen_options.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/scheduler.h"

namespace forge::cli {

struct ServeContext {
  const CausalLM* model = nullptr;
  serve::Scheduler* scheduler = nullptr;
  serve::Metrics* metrics = nullptr;
  std::optional<Tokenizer> tok;
  std::optional<ChatTemplate> tmpl;     // none: /v1/chat/completions answers 400
  std::vector<uint32_t> stop_ids;       // completions: the model's EOS
  std::vector<uint32_t> chat_stop_ids;  // chat: EOS and the end-of-turn tokens
  std::string model_id;                 // what /v1/models lists
  std::string api_key;                  // empty: no authentication
  int64_t created = 0;                  // unix time the server started
  std::atomic<bool> stopping{false};  // after SIGTERM: new requests get 503 while the rest finish
  std::atomic<int> in_flight{0};      // completion requests not yet fully answered
};

// One choice of a request being generated: its job, and the text so far
// through the tokenizer's stream decoder and the stop strings.
class Choice {
 public:
  Choice(const ServeContext& ctx, std::shared_ptr<serve::Job> job, const std::vector<std::string>& stop);
  ~Choice();  // cancels the job if it is still running (a client that left)
  // Waits up to `wait` for tokens; returns the new text (stop strings held
  // back until they can no longer match) and appends the ids to `ids`.
  std::string poll(std::chrono::milliseconds wait, std::vector<uint32_t>* ids = nullptr);
  bool done() const { return done_; }
  // "stop" or "length" once done; ApiError 500 when generation failed.
  const std::string& finish_reason() const { return reason_; }
  int64_t tokens() const { return tokens_; }

 private:
  std::shared_ptr<serve::Job> job_;
  std::optional<StreamDecoder> decoder_;
  StopStrings stops_;
  bool done_ = false;
  std::string reason_;
  int64_t tokens_ = 0;
};

// A parsed request made into jobs: the prompt ids and one Choice per `n`.
struct Generation {
  serve::CompletionRequest req;
  std::vector<uint32_t> prompt;
  std::vector<std::unique_ptr<Choice>> choices;
  std::string id;  // "cmpl-..." / "chatcmpl-..."
};

// Parses and checks `body`, builds the prompt (tokenizer, chat template) and
// queues its choices. ApiError for anything the client got wrong or a full queue.
std::unique_ptr<Generation> start_generation(ServeContext& ctx, const std::string& body, bool chat);

// The whole response of a non-streamed request (waits for every choice).
// nullopt as soon as `client_gone` says the client left: the choices are then
// left to the caller to drop, which cancels their jobs and frees their rows.
std::optional<nlohmann::json> complete(const ServeContext& ctx, Generation& g,
                                       const std::function<bool()>& client_gone);

// The server-sent-event chunks of a streamed request.
nlohmann::json stream_chunk(const ServeContext& ctx, const Generation& g, size_t index, const std::string& text,
                            const std::vector<uint32_t>& ids, const std::string& finish_reason, bool first);
nlohmann::json usage_chunk(const ServeContext& ctx, const Generation& g);
nlohmann::json usage(const Generation& g);

}  // namespace forge::cli
