// forge serve: OpenAI requests into scheduler jobs, and tokens back into
// OpenAI's completion and chat-completion JSON (see serve_context.h).
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <random>

#include "chat_prompt.h"
#include "serve_context.h"

namespace forge::cli {

using json = nlohmann::json;
using serve::ApiError;
using serve::bad_request;

namespace {

std::string random_id(const char* prefix) {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard<std::mutex> l(mu);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)rng());
  return std::string(prefix) + buf;
}

uint64_t random_seed() {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard<std::mutex> l(mu);
  return rng();
}

std::vector<uint32_t> build_prompt(const ServeContext& ctx, const serve::CompletionRequest& r) {
  if (r.chat) {
    if (!ctx.tok || !ctx.tmpl)
      throw bad_request("model '" + ctx.model_id + "' has no " + (ctx.tok ? "chat template" : "tokenizer") +
                            "; use /v1/completions",
                        "messages");
    std::string text;
    try {
      text = ctx.tmpl->render(r.messages, /*add_generation_prompt=*/true);
    } catch (const Error& e) {
      throw bad_request(std::string("the chat template failed on these messages: ") + e.what(), "messages");
    }
    return encode_rendered(*ctx.tok, text);
  }
  if (r.prompt_ids) return *r.prompt_ids;
  if (!ctx.tok) throw bad_request("model '" + ctx.model_id + "' has no tokenizer; send the prompt as token ids", "prompt");
  try {
    return ctx.tok->encode(*r.prompt_text);
  } catch (const ValueError& e) {
    throw bad_request(std::string("the prompt cannot be encoded: ") + e.what(), "prompt");
  }
}

}  // namespace

Choice::Choice(const ServeContext& ctx, std::shared_ptr<serve::Job> job, const std::vector<std::string>& stop)
    : job_(std::move(job)), stops_(stop) {
  if (ctx.tok) decoder_.emplace(*ctx.tok, /*skip_special=*/true);
}

Choice::~Choice() {
  if (!done_) job_->cancel();
}

std::string Choice::poll(std::chrono::milliseconds wait, std::vector<uint32_t>* ids) {
  if (done_) return {};
  serve::Job::Chunk c = job_->take(wait);
  std::string text;
  for (uint32_t id : c.ids) {
    if (stops_.hit()) break;
    ++tokens_;
    if (ids) ids->push_back(id);
    if (decoder_) text += stops_.push(decoder_->push(id));
  }
  if (stops_.hit()) {
    job_->cancel();
    done_ = true;
    reason_ = "stop";
    return text;
  }
  if (c.done) {
    if (c.finish_reason == "error") {
      done_ = true;
      throw ApiError(500, "server_error", "generation failed: " + c.error);
    }
    if (decoder_) text += stops_.push(decoder_->flush());
    if (!stops_.hit()) text += stops_.flush();
    done_ = true;
    reason_ = c.finish_reason == "length" ? "length" : "stop";
  }
  return text;
}

std::unique_ptr<Generation> start_generation(ServeContext& ctx, const std::string& body, bool chat) {
  if (ctx.stopping) throw ApiError(503, "server_error", "the server is shutting down", {}, "shutting_down");
  auto g = std::make_unique<Generation>();
  g->req = serve::parse_completion_request(body, chat);
  const serve::CompletionRequest& r = g->req;
  if (!r.stop.empty() && !ctx.tok) throw bad_request("'stop' needs a tokenizer, and this model has none", "stop");
  g->prompt = build_prompt(ctx, r);
  if (g->prompt.empty()) throw bad_request("the prompt encodes to no tokens", "prompt");
  const int64_t P = int64_t(g->prompt.size()), room = ctx.scheduler->ctx() - P;
  serve::JobSpec spec;
  spec.prompt = g->prompt;
  // OpenAI's defaults: 16 for completions, up to the context for chat.
  spec.max_tokens = r.max_tokens ? *r.max_tokens : std::max<int64_t>(0, chat ? room : std::min<int64_t>(16, room));
  spec.sample.temperature = r.temperature;
  spec.sample.top_p = r.top_p;
  spec.sample.top_k = r.top_k;
  const uint64_t seed = r.seed ? *r.seed : random_seed();
  spec.stop_ids = chat ? ctx.chat_stop_ids : ctx.stop_ids;
  g->id = random_id(chat ? "chatcmpl-" : "cmpl-");
  for (int64_t i = 0; i < r.n; ++i) {
    spec.sample.seed = seed + uint64_t(i);  // choice i draws its own tokens
    g->choices.push_back(std::make_unique<Choice>(ctx, ctx.scheduler->submit(spec), r.stop));
  }
  return g;
}

json usage(const Generation& g) {
  int64_t gen = 0;
  for (const auto& c : g.choices) gen += c->tokens();
  const int64_t P = int64_t(g.prompt.size());
  return {{"prompt_tokens", P}, {"completion_tokens", gen}, {"total_tokens", P + gen}};
}

std::optional<json> complete(const ServeContext& ctx, Generation& g, const std::function<bool()>& client_gone) {
  json choices = json::array();
  for (size_t i = 0; i < g.choices.size(); ++i) {
    Choice& c = *g.choices[i];
    std::string text = g.req.echo && g.req.prompt_text ? *g.req.prompt_text : std::string();
    std::vector<uint32_t> ids;
    while (!c.done()) {
      text += c.poll(std::chrono::milliseconds(50), &ids);
      if (client_gone()) return std::nullopt;
    }
    json choice{{"index", i}, {"finish_reason", c.finish_reason()}, {"token_ids", ids}};
    if (g.req.chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
    else choice["text"] = text, choice["logprobs"] = nullptr;
    choices.push_back(choice);
  }
  return json{{"id", g.id},
              {"object", g.req.chat ? "chat.completion" : "text_completion"},
              {"created", int64_t(std::time(nullptr))},
              {"model", ctx.model_id},
              {"choices", choices},
              {"usage", usage(g)}};
}

json stream_chunk(const ServeContext& ctx, const Generation& g, size_t index, const std::string& text,
                  const std::vector<uint32_t>& ids, const std::string& finish_reason, bool first) {
  json choice{{"index", index}, {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)},
              {"token_ids", ids}};
  if (g.req.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && finish_reason.empty())) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  json j{{"id", g.id},
         {"object", g.req.chat ? "chat.completion.chunk" : "text_completion"},
         {"created", int64_t(std::time(nullptr))},
         {"model", ctx.model_id},
         {"choices", json::array({choice})}};
  if (g.req.include_usage) j["usage"] = nullptr;
  return j;
}

json usage_chunk(const ServeContext& ctx, const Generation& g) {
  return {{"id", g.id},
          {"object", g.req.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", int64_t(std::time(nullptr))},
          {"model", ctx.model_id},
          {"choices", json::array()},
          {"usage", usage(g)}};
}

}  // namespace forge::cli
