// forge serve through the binary on a loopback port, with an httplib client:
// completions and chat equal `forge generate` on the same prompt and
// sampling settings, streaming equals the whole response, concurrent
// requests equal sequential ones (continuous batching must not change a
// request's tokens; on GPT-2 too), every error case answers OpenAI's error
// shape and the server keeps serving (a full queue included), a client that
// leaves mid-stream or before a non-streamed answer frees its slot, --adapter
// serves what generate --adapter generates, and SIGTERM lets the request in
// flight finish before exiting 0. The model is llama-tiny with a byte-level
// tokenizer and SmolLM2's chat template, unless a test names another.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <future>
#include <regex>

#include "unit/chat_fixture.h"
#include "unit/serve_process.h"
#include "unit/this_build.h"

namespace fs = std::filesystem;
using forge::testing::parse_sse;
using forge::testing::run_cli;
using forge::testing::ServeProcess;
using json = nlohmann::json;

namespace {

std::string id_list(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

// The last JSON line of a `forge generate --json` run.
json generate_json(const std::vector<std::string>& args, const fs::path& scratch) {
  const auto r = run_cli(args, scratch);
  EXPECT_EQ(r.code, 0) << r.out;
  json j;
  for (const auto& line : forge::testing::lines_of(r.out))
    if (!line.empty() && line[0] == '{') j = json::parse(line);
  return j;
}

struct Reply {
  int status = 0;
  json body;
};

Reply post(httplib::Client& c, const std::string& path, const std::string& body,
           const httplib::Headers& headers = {}) {
  auto r = c.Post(path, headers, body, "application/json");
  if (!r) return {};
  Reply out{r->status, json()};
  out.body = json::parse(r->body, nullptr, false);
  return out;
}

Reply post(httplib::Client& c, const std::string& path, const json& body) { return post(c, path, body.dump()); }

std::vector<uint32_t> ids_of(const json& choice) { return choice.at("token_ids").get<std::vector<uint32_t>>(); }

// A value of /metrics, e.g. "forge_generated_tokens_total".
double metric(httplib::Client& c, const std::string& name) {
  auto r = c.Get("/metrics");
  if (!r) return -1;
  std::smatch m;
  const std::regex re("\n" + std::regex_replace(name, std::regex(R"([{}"+.])"), R"(\$&)") + " ([0-9.e+-]+)");
  const std::string body = "\n" + r->body;
  return std::regex_search(body, m, re) ? std::stod(m[1]) : -1;
}

// Whether the batch and the queue empty within two seconds (the gauges are
// set after each scheduler step, so they may lag a response by a step).
bool goes_idle(httplib::Client& c) {
  for (int i = 0; i < 200; ++i) {
    if (metric(c, "forge_queue_length") == 0 && metric(c, "forge_batch_size") == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A short completion asked again every 20 ms until one is served (a freed
// row is taken at the next decode step), for up to two seconds.
Reply completes_soon(httplib::Client& c) {
  Reply r;
  for (int i = 0; i < 100 && r.status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    r = post(c, "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}});
  }
  return r;
}

// Sends a completion request over a raw socket and returns the open socket
// (closing it is a client leaving); a streamed one is read up to its first
// event.
int start_request(int port, const json& body, std::string* head = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  const std::string b = body.dump();
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  if (::send(fd, req.data(), req.size(), 0) != ssize_t(req.size())) return -1;
  std::string got;
  char buf[4096];
  while (body.value("stream", false) && got.find("data: ") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  if (head) *head = got;
  return fd;
}

class ServeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new forge::testing::ScratchDir("serve");
    model_ = new fs::path(forge::testing::make_chat_model(scratch_->path));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete scratch_;
  }
  static const fs::path& model() { return *model_; }
  static const fs::path& scratch() { return scratch_->path; }

  static forge::testing::ScratchDir* scratch_;
  static fs::path* model_;
};
forge::testing::ScratchDir* ServeCli::scratch_ = nullptr;
fs::path* ServeCli::model_ = nullptr;

TEST_F(ServeCli, CompletionsAndChatEqualGenerate) {
  ServeProcess s(model(), scratch());
  ASSERT_TRUE(s.up()) << s.output();
  auto c = s.client();
  // Greedy on token ids, as forge generate --greedy.
  const std::vector<uint32_t> prompt = {17, 230, 9, 41, 5};
  Reply r = post(*c, "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  json g = generate_json({"generate", "-m", model().string(), "--prompt-ids", id_list(prompt), "-n", "6", "--greedy",
                          "--device", "cpu", "--json"},
                         scratch());
  EXPECT_EQ(ids_of(r.body["choices"][0]), g["ids"].get<std::vector<uint32_t>>());
  EXPECT_EQ(r.body["object"], "text_completion");
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(r.body["usage"]["completion_tokens"], g["ids"].size());
  EXPECT_EQ(r.body["usage"]["total_tokens"], 5 + g["ids"].size());

  // Sampled text, seeded, as forge generate --temperature --top-k --seed.
  r = post(*c, "/v1/completions",
           json{{"prompt", "the cat sat on"}, {"max_tokens", 12}, {"temperature", 0.8}, {"top_k", 50}, {"seed", 7}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  g = generate_json({"generate", "-m", model().string(), "-p", "the cat sat on", "-n", "12", "--temperature", "0.8",
                     "--top-k", "50", "--seed", "7", "--device", "cpu", "--json"},
                    scratch());
  EXPECT_EQ(ids_of(r.body["choices"][0]), g["ids"].get<std::vector<uint32_t>>());
  EXPECT_EQ(r.body["choices"][0]["text"], g["text"]);
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], g["prompt_ids"].size());

  // Chat through the template, as forge generate --chat --messages.
  const json messages = json::array({{{"role", "system"}, {"content", "be brief"}},
                                     {{"role", "user"}, {"content", "hi there"}}});
  forge::testing::write_text(scratch() / "messages.json", messages.dump());
  r = post(*c, "/v1/chat/completions", json{{"messages", messages}, {"max_tokens", 10}, {"temperature", 1.0}, {"seed", 3}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  g = generate_json({"generate", "-m", model().string(), "--chat", "--messages", (scratch() / "messages.json").string(),
                     "-n", "10", "--temperature", "1", "--seed", "3", "--device", "cpu", "--json"},
                    scratch());
  EXPECT_EQ(ids_of(r.body["choices"][0]), g["ids"].get<std::vector<uint32_t>>());
  EXPECT_EQ(r.body["choices"][0]["message"]["content"], g["text"]);
  EXPECT_EQ(r.body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r.body["object"], "chat.completion");
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], g["prompt_ids"].size());

  // n choices draw with seeds seed, seed + 1, ...: choice 1 is the request with seed 8.
  r = post(*c, "/v1/completions", json{{"prompt", "the cat"}, {"max_tokens", 8}, {"n", 2}, {"seed", 7}});
  Reply one = post(*c, "/v1/completions", json{{"prompt", "the cat"}, {"max_tokens", 8}, {"seed", 8}});
  ASSERT_EQ(r.body["choices"].size(), 2u);
  EXPECT_EQ(r.body["choices"][1]["index"], 1);
  EXPECT_EQ(ids_of(r.body["choices"][1]), ids_of(one.body["choices"][0]));

  // GET /v1/models, /health.
  auto m = c->Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], model().filename().string());
  EXPECT_EQ(c->Get("/health")->status, 200);
}

TEST_F(ServeCli, StreamingEqualsTheWholeResponse) {
  ServeProcess s(model(), scratch());
  ASSERT_TRUE(s.up()) << s.output();
  auto c = s.client();
  for (bool chat : {false, true}) {
    json body = {{"max_tokens", 14}, {"seed", 11}, {"n", 2}, {"stop", "zz"}};
    if (chat) body["messages"] = json::array({{{"role", "user"}, {"content", "tell me a story"}}});
    else body["prompt"] = "once upon a time";
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    Reply whole = post(*c, path, body);
    ASSERT_EQ(whole.status, 200) << whole.body.dump();
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    auto r = c->Post(path, body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
    auto sse = parse_sse(r->body);
    EXPECT_TRUE(sse.done) << "the stream ends with data: [DONE]";
    std::vector<std::string> text(2);
    std::vector<std::vector<uint32_t>> ids(2);
    std::vector<std::string> finish(2);
    json usage;
    for (const json& e : sse.events) {
      if (e["choices"].empty()) {
        usage = e["usage"];
        continue;
      }
      const json& ch = e["choices"][0];
      const size_t i = ch["index"];
      text[i] += chat ? ch["delta"].value("content", "") : ch["text"].get<std::string>();
      for (uint32_t id : ch["token_ids"]) ids[i].push_back(id);
      if (!ch["finish_reason"].is_null()) finish[i] = ch["finish_reason"];
    }
    EXPECT_EQ(sse.events.front()["object"], chat ? "chat.completion.chunk" : "text_completion");
    if (chat) EXPECT_EQ(sse.events.front()["choices"][0]["delta"]["role"], "assistant");
    for (size_t i = 0; i < 2; ++i) {
      const json& w = whole.body["choices"][i];
      EXPECT_EQ(text[i], chat ? w["message"]["content"] : w["text"]) << "choice " << i;
      EXPECT_EQ(ids[i], ids_of(w)) << "choice " << i;
      EXPECT_EQ(finish[i], w["finish_reason"]) << "choice " << i;
    }
    EXPECT_EQ(usage, whole.body["usage"]);
  }
}

// Request i's prompt: text, or token ids for a model without a tokenizer.
json text_prompt(int i) { return std::string("story number ") + std::to_string(i) + " begins"; }
json id_prompt(int i) { return json::array({1 + i, 2, 3 + (7 * i) % 900}); }

// Sequential and concurrent runs of the same requests (some streamed) give
// the same tokens; the batch did hold several sequences at once.
// N requests of about `tokens` tokens each, at most `batch` decoded together.
void check_concurrent(const fs::path& model, const fs::path& scratch, const std::string& device, int N, int tokens,
                      json (*prompt)(int) = text_prompt, int batch = 6) {
  ServeProcess s(model, scratch, {"--max-batch", std::to_string(batch)}, device);
  ASSERT_TRUE(s.up()) << s.output();
  EXPECT_NE(s.output().find("batched decode"), std::string::npos) << s.output();
  auto request = [&](int i) {
    json b = {{"prompt", prompt(i)}, {"max_tokens", tokens + i % 4}, {"seed", 100 + i}};
    if (i % 3 == 0) b["temperature"] = 0;
    if (i % 2) b["stream"] = true;
    return b;
  };
  auto run = [&](int i) {
    auto c = s.client();
    const json b = request(i);
    auto r = c->Post("/v1/completions", b.dump(), "application/json");
    std::vector<uint32_t> ids;
    if (!r || r->status != 200) return ids;
    if (b.value("stream", false)) {
      for (const json& e : parse_sse(r->body).events)
        for (uint32_t id : e["choices"][0]["token_ids"]) ids.push_back(id);
    } else {
      ids = ids_of(json::parse(r->body)["choices"][0]);
    }
    return ids;
  };
  std::vector<std::vector<uint32_t>> alone(N), together(N);
  for (int i = 0; i < N; ++i) alone[size_t(i)] = run(i);
  std::vector<std::future<std::vector<uint32_t>>> fs;
  for (int i = 0; i < N; ++i) fs.push_back(std::async(std::launch::async, run, i));
  for (int i = 0; i < N; ++i) together[size_t(i)] = fs[size_t(i)].get();
  for (int i = 0; i < N; ++i) {
    EXPECT_FALSE(alone[size_t(i)].empty()) << i;
    EXPECT_EQ(together[size_t(i)], alone[size_t(i)]) << "request " << i << " on " << device;
  }
  auto c = s.client();
  const double steps = metric(*c, "forge_decode_step_batch_count");
  const double single = metric(*c, "forge_decode_step_batch_bucket{le=\"1\"}");
  EXPECT_GT(steps, single) << "some decode steps held more than one sequence";
}

TEST_F(ServeCli, ConcurrentRequestsEqualSequential) { check_concurrent(model(), scratch(), "cpu", 10, 10); }

// Fewer and shorter on WebGPU: SwiftShader takes a good part of a second per step.
TEST_F(ServeCli, ConcurrentRequestsEqualSequentialWebGpu) {
  if (!forge::testing::webgpu_built()) GTEST_SKIP() << "built without WebGPU";
  check_concurrent(model(), scratch(), "webgpu", 4, 3);
}

TEST_F(ServeCli, ErrorsAnswerInOpenAiShapeAndTheServerKeepsServing) {
  ServeProcess s(model(), scratch(), {"--api-key", "sekret", "--ctx", "64", "--max-batch", "1", "--queue", "0"});
  ASSERT_TRUE(s.up()) << s.output();
  auto c = s.client();
  const httplib::Headers auth = {{"Authorization", "Bearer sekret"}};
  auto check = [&](const Reply& r, int status, const std::string& param, const std::string& what) {
    EXPECT_EQ(r.status, status) << what << ": " << r.body.dump();
    ASSERT_TRUE(r.body.is_object() && r.body.contains("error")) << what << ": " << r.body.dump();
    const json& e = r.body["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << what;
    EXPECT_TRUE(e["type"].is_string()) << what;
    EXPECT_TRUE(e.contains("code")) << what;
    if (!param.empty()) EXPECT_EQ(e["param"], param) << what;
    auto h = c->Get("/health");
    ASSERT_TRUE(h) << "the server stopped after: " << what;
    EXPECT_EQ(h->status, 200) << what;
  };
  const std::string ok = json{{"prompt", "hello"}, {"max_tokens", 2}}.dump();
  check(post(*c, "/v1/completions", ok), 401, "", "no API key");
  check(post(*c, "/v1/completions", ok, {{"Authorization", "Bearer wrong"}}), 401, "", "a wrong API key");
  check(post(*c, "/v1/completions", "{\"prompt\": \"hi\",", auth), 400, "", "malformed JSON");
  check(post(*c, "/v1/completions", "[1, 2]", auth), 400, "", "not an object");
  check(post(*c, "/v1/completions", "{\"prompt\": \"\xff\xfe\"}", auth), 400, "", "a string that is not UTF-8");
  auto bad = [&](json body, const std::string& param, const std::string& what, const std::string& path = "/v1/completions") {
    check(post(*c, path, body.dump(), auth), 400, param, what);
  };
  bad({{"max_tokens", 2}}, "prompt", "no prompt");
  bad({{"prompt", ""}}, "prompt", "an empty prompt");
  bad({{"prompt", 5}}, "prompt", "a number as prompt");
  bad({{"prompt", {1, 5000}}}, "prompt", "a token id beyond the vocabulary");
  bad({{"prompt", "hi"}, {"temperature", "hot"}}, "temperature", "a string temperature");
  bad({{"prompt", "hi"}, {"temperature", 3}}, "temperature", "temperature out of range");
  bad({{"prompt", "hi"}, {"top_p", 0}}, "top_p", "top_p 0");
  bad({{"prompt", "hi"}, {"top_k", -1}}, "top_k", "negative top_k");
  bad({{"prompt", "hi"}, {"max_tokens", -1}}, "max_tokens", "negative max_tokens");
  bad({{"prompt", "hi"}, {"max_tokens", 1.5}}, "max_tokens", "fractional max_tokens");
  bad({{"prompt", "hi"}, {"n", 0}}, "n", "n 0");
  bad({{"prompt", "hi"}, {"stream", "yes"}}, "stream", "a string stream");
  bad({{"prompt", "hi"}, {"stop", {"a", "b", "c", "d", "e"}}}, "stop", "five stop strings");
  bad({{"prompt", "hi"}, {"max_tokens", 100}}, "max_tokens", "beyond the context of 64");
  bad({{"messages", "hi"}}, "messages", "messages not a list", "/v1/chat/completions");
  bad({{"messages", json::array({{{"content", "x"}}})}}, "messages[0].role", "a message without a role",
      "/v1/chat/completions");
  Reply r = post(*c, "/v1/nowhere", ok, auth);
  check(r, 404, "", "an unknown route");
  auto g = c->Get("/v1/models/other", auth);
  ASSERT_TRUE(g);
  check({g->status, json::parse(g->body)}, 404, "model", "an unknown model");
  g = c->Get("/v1/models/%FF", auth);  // the name quoted in the message is not UTF-8
  ASSERT_TRUE(g);
  check({g->status, json::parse(g->body, nullptr, false)}, 404, "model", "an unknown model named by a byte");
  check(post(*c, "/v1/completions", std::string(5 << 20, ' '), auth), 413, "", "a body over 4 MiB");
  EXPECT_EQ(post(*c, "/v1/completions", ok, auth).status, 200);
}

TEST_F(ServeCli, ClientLeavingMidStreamFreesItsSlotAtOnce) {
  ServeProcess s(model(), scratch(), {"--max-batch", "1", "--queue", "0"});
  ASSERT_TRUE(s.up()) << s.output();
  auto c = s.client();
  // Greedy, so that the stream cannot end early at a sampled EOS. On a fast
  // CPU its 250 tokens take tens of milliseconds: a stream that ended before
  // the second request came is started again (a few tries).
  int fd = -1;
  Reply busy;
  double before = 0;  // tokens generated by the streams that ended on their own
  for (int attempt = 0; attempt < 5; ++attempt) {
    before = metric(*c, "forge_generated_tokens_total");
    fd = start_request(s.port(), {{"prompt", {5, 6}}, {"max_tokens", 250}, {"stream", true}, {"temperature", 0}});
    ASSERT_GE(fd, 0);
    // The only row is busy and nothing may wait: 503 in OpenAI's shape.
    busy = post(*c, "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}});
    if (busy.status == 503) break;
    ::close(fd);
    ASSERT_TRUE(goes_idle(*c)) << "the finished stream left its row taken";
  }
  EXPECT_EQ(busy.status, 503) << busy.body.dump();
  EXPECT_EQ(busy.body["error"]["code"], "queue_full");
  ::close(fd);
  // Freed at the next decode step: a new request soon gets the row.
  const Reply next = completes_soon(*c);
  EXPECT_EQ(next.status, 200) << next.body.dump();
  EXPECT_LT(metric(*c, "forge_generated_tokens_total") - before, 200) << "the abandoned request kept generating";
  EXPECT_TRUE(goes_idle(*c)) << "the row stayed taken";
}

// A non-streamed request writes nothing until it is done, yet a client that
// leaves it frees its row as soon as it is gone, like a stream's. Its 16
// choices of 250 tokens run one after another (one row): 4000 tokens, far
// more than are generated before the client leaves.
TEST_F(ServeCli, ClientLeavingANonStreamedRequestFreesItsSlotAtOnce) {
  ServeProcess s(model(), scratch(), {"--max-batch", "1", "--queue", "16"});
  ASSERT_TRUE(s.up()) << s.output();
  auto c = s.client();
  const int fd = start_request(s.port(), {{"prompt", {5, 6}}, {"max_tokens", 250}, {"n", 16}});
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 500 && metric(*c, "forge_generated_tokens_total") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ::close(fd);
  const Reply next = completes_soon(*c);
  EXPECT_EQ(next.status, 200) << next.body.dump();
  EXPECT_LT(metric(*c, "forge_generated_tokens_total"), 2000) << "the abandoned request kept generating";
  EXPECT_EQ(metric(*c, "forge_requests_total{endpoint=\"/v1/completions\",status=\"499\"}"), 1);
  EXPECT_TRUE(goes_idle(*c)) << "rows or places in the queue stayed taken";
}

// With every row busy and the queue full, a request gets 503 in OpenAI's
// error shape with Retry-After, streamed or not; the request that found room
// in the queue still finishes, and the server goes on serving. A stream of
// 16 choices of 250 tokens holds all 16 rows while three requests arrive at
// once: one waits, two are refused. Should the rows free up before they
// arrive (a slow machine), none is refused and the round is tried again;
// should the stream itself be refused (the last round's rows and queue not
// yet freed), its 503 is counted and the round is tried again.
TEST_F(ServeCli, FullQueueAnswers503AndServingGoesOn) {
  ServeProcess s(model(), scratch(), {"--max-batch", "16", "--queue", "1"});
  ASSERT_TRUE(s.up()) << s.output();
  auto c = s.client();
  int refused = 0, served = 0, streams_refused = 0;
  for (int round = 0; round < 5 && refused == 0; ++round) {
    std::string head;
    const int fd = start_request(s.port(), {{"prompt", {5, 6}}, {"max_tokens", 250}, {"n", 16}, {"stream", true}},
                                 &head);
    ASSERT_GE(fd, 0);
    if (head.find("data: ") == std::string::npos) {
      ::close(fd);
      ASSERT_NE(head.find(" 503 "), std::string::npos) << "the stream neither started nor was refused: " << head;
      ++streams_refused;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    std::vector<std::future<httplib::Result>> fs;
    for (int i = 0; i < 3; ++i)
      fs.push_back(std::async(std::launch::async, [&, i] {
        auto cc = s.client();
        const json b = {{"prompt", {7, 8}}, {"max_tokens", 3}, {"temperature", 0}, {"stream", i == 2}};
        return cc->Post("/v1/completions", b.dump(), "application/json");
      }));
    for (auto& f : fs) {
      httplib::Result r = f.get();
      ASSERT_TRUE(r);
      if (r->status == 200) {
        ++served;
        continue;
      }
      ++refused;
      EXPECT_EQ(r->status, 503) << r->body;
      EXPECT_EQ(r->get_header_value("Retry-After"), "1");
      EXPECT_NE(r->get_header_value("Content-Type").find("application/json"), std::string::npos);
      const json e = json::parse(r->body, nullptr, false);
      ASSERT_TRUE(e.is_object() && e.contains("error")) << r->body;
      EXPECT_EQ(e["error"]["type"], "server_error");
      EXPECT_EQ(e["error"]["code"], "queue_full");
      EXPECT_NE(e["error"]["message"].get<std::string>().find("--queue 1)"), std::string::npos) << r->body;
    }
    ::close(fd);
  }
  EXPECT_GT(refused, 0) << "no request was refused while every row was busy and the queue full";
  EXPECT_GT(served, 0) << "the request that waited in the queue was not served";
  EXPECT_EQ(post(*c, "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}}).status, 200);
  EXPECT_EQ(metric(*c, "forge_requests_total{endpoint=\"/v1/completions\",status=\"503\"}"),
            refused + streams_refused);
  EXPECT_TRUE(goes_idle(*c)) << "rows or places in the queue stayed taken";
}

TEST_F(ServeCli, SigtermFinishesTheRequestInFlightAndExitsZero) {
  ServeProcess s(model(), scratch(), {"--max-batch", "2"});
  ASSERT_TRUE(s.up()) << s.output();
  auto fut = std::async(std::launch::async, [&] {
    auto c = s.client();
    return c->Post("/v1/completions", json{{"prompt", {7, 8, 9}}, {"max_tokens", 120}, {"stream", true}}.dump(),
                   "application/json");
  });
  // Wait until it is generating, then ask the server to stop.
  auto c = s.client();
  for (int i = 0; i < 200 && metric(*c, "forge_generated_tokens_total") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.process().signal(SIGTERM);
  auto r = fut.get();
  ASSERT_TRUE(r) << "the request in flight was cut off";
  auto sse = parse_sse(r->body);
  EXPECT_TRUE(sse.done);
  ASSERT_FALSE(sse.events.empty());
  EXPECT_FALSE(sse.events.back()["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(s.process().wait(), 0) << s.output();
  EXPECT_NE(s.output().find("SIGTERM"), std::string::npos) << s.output();
  EXPECT_FALSE(s.client()->Get("/health")) << "still accepting after SIGTERM";
}

// GPT-2 decodes in the same batched rows as the Llama family, with the
// results of forge generate, and a folder without a tokenizer takes ids.
TEST_F(ServeCli, Gpt2WithoutTokenizerServesTokenIds) {
  const fs::path gpt2 = fs::path(forge::testing::test_data_dir()) / "gpt2-tiny";
  ServeProcess s(gpt2, scratch(), {"--max-batch", "3"});
  ASSERT_TRUE(s.up()) << s.output();
  EXPECT_NE(s.output().find("batched decode"), std::string::npos) << s.output();
  auto c = s.client();
  std::vector<std::future<Reply>> fs;
  for (int i = 0; i < 3; ++i)
    fs.push_back(std::async(std::launch::async, [&, i] {
      auto cc = s.client();
      return post(*cc, "/v1/completions", json{{"prompt", {1 + i, 2, 3}}, {"max_tokens", 5}, {"temperature", 0}});
    }));
  for (int i = 0; i < 3; ++i) {
    Reply r = fs[size_t(i)].get();
    ASSERT_EQ(r.status, 200) << r.body.dump();
    json g = generate_json({"generate", "-m", gpt2.string(), "--prompt-ids", std::to_string(1 + i) + ",2,3", "-n", "5",
                            "--greedy", "--device", "cpu", "--json"},
                           scratch());
    EXPECT_EQ(ids_of(r.body["choices"][0]), g["ids"].get<std::vector<uint32_t>>()) << i;
  }
  Reply text = post(*c, "/v1/completions", json{{"prompt", "hello"}});
  EXPECT_EQ(text.status, 400);
  Reply chat = post(*c, "/v1/chat/completions", json{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}});
  EXPECT_EQ(chat.status, 400);
}

// 32 concurrent clients on GPT-2 in one batch of 32 rows, as sequential runs.
TEST_F(ServeCli, Gpt2ConcurrentRequestsEqualSequential) {
  check_concurrent(fs::path(forge::testing::test_data_dir()) / "gpt2-tiny", scratch(), "cpu", 32, 8, id_prompt, 32);
}

// --adapter: the served tokens are forge generate --adapter's (the adapter
// applies in the batched rows too); a folder that is no adapter stops the
// server before it listens, with a message naming it.
TEST_F(ServeCli, AdapterAppliesAsInGenerate) {
  const fs::path base = fs::path(forge::testing::test_data_dir()) / "llama3-tiny", adapter = base / "adapter";
  const std::vector<uint32_t> prompt = {17, 230, 9, 41, 5};
  auto generated = [&](bool with) {
    std::vector<std::string> args = {"generate", "-m", base.string(), "--prompt-ids", id_list(prompt), "-n", "8",
                                     "--greedy", "--device", "cpu", "--json"};
    if (with) args.insert(args.end(), {"--adapter", adapter.string()});
    return generate_json(args, scratch())["ids"].get<std::vector<uint32_t>>();
  };
  const std::vector<uint32_t> with = generated(true), without = generated(false);
  ASSERT_NE(with, without) << "the adapter must change this prompt's greedy tokens for the test to tell";
  {
    ServeProcess s(base, scratch(), {"--adapter", adapter.string(), "--max-batch", "2"});
    ASSERT_TRUE(s.up()) << s.output();
    auto c = s.client();
    std::vector<std::future<Reply>> fs;
    for (int i = 0; i < 2; ++i)  // two at once: the adapter in a batched step
      fs.push_back(std::async(std::launch::async, [&] {
        auto cc = s.client();
        return post(*cc, "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}});
      }));
    for (auto& f : fs) {
      Reply r = f.get();
      ASSERT_EQ(r.status, 200) << r.body.dump();
      EXPECT_EQ(ids_of(r.body["choices"][0]), with);
    }
  }
  const auto r = run_cli({"serve", "-m", base.string(), "--adapter", (scratch() / "no-adapter").string(), "--port", "0",
                          "--device", "cpu"},
                         scratch());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("no-adapter"), std::string::npos) << r.out;
}

// The official OpenAI Node SDK (npm `openai`, installed by `npm ci`) as the
// client: tests/node/openai_sdk.mjs.
TEST_F(ServeCli, OpenAiNodeSdk) {
  const fs::path root = fs::path(forge::testing::test_data_dir()).parent_path().parent_path();
  if (!fs::exists(root / "node_modules" / "openai" / "package.json") || std::system("node --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "node or the npm package openai is missing (run npm ci)";
  ServeProcess s(model(), scratch(), {"--max-batch", "32"});
  ASSERT_TRUE(s.up()) << s.output();
  const fs::path out = scratch() / "node_sdk.txt";
  const std::string cmd = "node " + (root / "tests" / "node" / "openai_sdk.mjs").string() + " http://127.0.0.1:" +
                          std::to_string(s.port()) + "/v1 " + model().filename().string() + " > " + out.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << forge::testing::read_bytes(out);
  auto c = s.client();
  const double steps = metric(*c, "forge_decode_step_batch_count");
  const double small = metric(*c, "forge_decode_step_batch_bucket{le=\"8\"}");
  EXPECT_GT(steps, small) << "some decode steps held more than 8 sequences";
}

}  // namespace
