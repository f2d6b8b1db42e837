// forge chat and forge generate --chat through the binary: piped stdin and a
// pseudo-terminal, on tests/fixtures/llama-tiny given a small byte-level BPE
// tokenizer (ids < 1000, the model's vocabulary) and SmolLM2's chat template.
// Replies are greedy or sampled with a fixed seed (the tiny model's greedy
// reply repeats one token; sampled ones vary), so a chat turn must give
// exactly the ids (and text) of `forge generate --prompt-ids <the rendered
// conversation>` with the same flags.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "forge/chat_template.h"
#include "forge/tokenizer.h"
#include "unit/chat_fixture.h"
#include "unit/cli_process.h"
#include "unit/this_build.h"

namespace fs = std::filesystem;
using forge::testing::CliOptions;
using forge::testing::run_cli;
using forge::testing::ScratchDir;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using forge::testing::make_chat_model;
using forge::testing::write_text;

namespace {

// The JSON lines of an output (stdout and stderr share it).
std::vector<json> json_lines(const std::string& out) {
  std::vector<json> v;
  for (const std::string& line : forge::testing::lines_of(out))
    if (!line.empty() && line[0] == '{') v.push_back(json::parse(line));
  return v;
}

std::string id_list(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

class ChatCli : public ::testing::Test {
 protected:
  void SetUp() override { model = make_chat_model(dir.path); }

  // The ids the conversation renders to (with the generation prompt).
  std::vector<uint32_t> rendered(const ojson& messages) const {
    const auto tmpl = forge::ChatTemplate::from_model_dir(model.string());
    const auto tok = forge::Tokenizer::from_dir(model);
    return tok.encode(tmpl.render(messages, true), false);
  }
  // `forge chat` with `input` on stdin.
  forge::testing::CliRun chat(const std::string& input, std::vector<std::string> extra = {}) {
    write_text(dir.path / "stdin.txt", input);
    std::vector<std::string> args = {"chat", "-m", model.string(), "-n", "12", "--device", "cpu"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), extra.begin(), extra.end());
    CliOptions o;
    o.stdin_file = dir.path / "stdin.txt";
    return run_cli(args, dir.path, o);
  }
  // `forge generate FLAGS --prompt-ids ids -n n --json`.
  json generate_ids(const std::vector<uint32_t>& ids, int n) {
    std::vector<std::string> args = {"generate", "-m", model.string(), "-n", std::to_string(n), "--device", "cpu",
                                     "--prompt-ids", id_list(ids), "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto r = run_cli(args, dir.path);
    EXPECT_EQ(r.code, 0) << r.out;
    auto j = json_lines(r.out);
    EXPECT_EQ(j.size(), 1u) << r.out;
    return j.empty() ? json() : j[0];
  }
  // The chat turn's reply against generate's from the same prompt ids: the
  // same ids up to and including the stop id, and the same text.
  void expect_same_reply(const json& turn, const std::vector<uint32_t>& prompt) {
    const auto reply = turn["ids"].get<std::vector<uint32_t>>();
    ASSERT_FALSE(reply.empty());
    // Generate stops only at the model's EOS (0), not at <|im_end|> (2): ask
    // for as many tokens as the reply has.
    const json g = generate_ids(prompt, int(reply.size()));
    EXPECT_EQ(g["prompt_ids"].get<std::vector<uint32_t>>(), prompt);
    EXPECT_EQ(g["ids"].get<std::vector<uint32_t>>(), reply);
    EXPECT_EQ(g["text"], turn["text"]);
  }

  ScratchDir dir{"chat_cli"};
  fs::path model;
  std::vector<std::string> flags = {"--temperature", "1", "--seed", "7"};  // the sampling flags of both
};

TEST_F(ChatCli, TurnsMatchGenerateAndReuseTheCache) {
  // The repeat penalty's window spans the cached conversation, as generate's spans its whole prompt.
  for (const auto& f : {std::vector<std::string>{"--greedy"}, std::vector<std::string>{"--top-k", "50", "--seed", "3"},
                        std::vector<std::string>{"--repeat-penalty", "1.8", "--min-p", "0.02", "--seed", "5"}}) {
  SCOPED_TRACE(f[0]);
  flags = f;
  const auto r = chat("Hello there\nHow are you today?\n", {"--json"});
  ASSERT_EQ(r.code, 0) << r.out;  // EOF ends the chat
  const auto turns = json_lines(r.out);
  ASSERT_EQ(turns.size(), 2u) << r.out;

  ojson messages = ojson::array({{{"role", "user"}, {"content", "Hello there"}}});
  const auto ids1 = rendered(messages);
  EXPECT_EQ(turns[0]["prompt_tokens"], ids1.size());
  EXPECT_EQ(turns[0]["cached_tokens"], 0);
  EXPECT_EQ(turns[0]["prefill_tokens"], ids1.size());
  expect_same_reply(turns[0], ids1);

  messages.push_back({{"role", "assistant"}, {"content", turns[0]["text"]}});
  messages.push_back({{"role", "user"}, {"content", "How are you today?"}});
  const auto ids2 = rendered(messages);
  EXPECT_EQ(turns[1]["prompt_tokens"], ids2.size());
  // Only the new turn is prefilled: at least the whole first prompt comes from the cache.
  EXPECT_GE(turns[1]["cached_tokens"].get<size_t>(), ids1.size());
  EXPECT_LT(turns[1]["prefill_tokens"].get<size_t>(), ids2.size() - ids1.size() + 1);
  EXPECT_EQ(turns[1]["cached_tokens"].get<size_t>() + turns[1]["prefill_tokens"].get<size_t>(), ids2.size());
  expect_same_reply(turns[1], ids2);
  }
}

TEST_F(ChatCli, AFullContextStartsANewConversation) {
  // Turn 3 does not fit 130 positions: it starts over with the new message alone.
  auto r = chat("Hello there\nHow are you today?\nAnd now?\n", {"--json", "--context", "130"});
  ASSERT_EQ(r.code, 0) << r.out;
  auto turns = json_lines(r.out);
  ASSERT_EQ(turns.size(), 3u) << r.out;
  EXPECT_GT(turns[1]["cached_tokens"], 0);
  EXPECT_EQ(turns[2]["cached_tokens"], 0);
  const auto ids3 = rendered(ojson::array({{{"role", "user"}, {"content", "And now?"}}}));
  EXPECT_EQ(turns[2]["prompt_tokens"], ids3.size());
  expect_same_reply(turns[2], ids3);
  EXPECT_NE(r.out.find("forge: the conversation fills the context (130 positions); starting a new conversation"),
            std::string::npos)
      << r.out;
  // A reply cut at the context ends the conversation too.
  const auto ids1 = rendered(ojson::array({{{"role", "user"}, {"content", "Hello there"}}}));
  const std::string ctx = std::to_string(ids1.size() + 5);
  r = chat("Hello there\nHello there\n", {"--json", "--context", ctx, "--ignore-eos"});
  ASSERT_EQ(r.code, 0) << r.out;
  turns = json_lines(r.out);
  ASSERT_EQ(turns.size(), 2u) << r.out;
  EXPECT_EQ(turns[0]["stop_reason"], "context");
  EXPECT_EQ(turns[0]["ids"].size(), 5u);
  EXPECT_EQ(turns[1]["cached_tokens"], 0);
  EXPECT_EQ(turns[1]["ids"], turns[0]["ids"]);
  EXPECT_NE(r.out.find("forge: the context (" + ctx + " positions) is full; starting a new conversation"),
            std::string::npos)
      << r.out;
}

TEST_F(ChatCli, PipedOutputHoldsTheRepliesOnly) {
  const auto j = json_lines(chat("Hello there\nHow are you today?\n", {"--json"}).out);
  ASSERT_EQ(j.size(), 2u);
  const auto r = chat("Hello there\nHow are you today?\n");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, j[0]["text"].get<std::string>() + "\n" + j[1]["text"].get<std::string>() + "\n");
}

TEST_F(ChatCli, VerboseReportsThePrefill) {
  const auto r = chat("Hello there\nHow are you today?\n", {"--verbose"});
  ASSERT_EQ(r.code, 0) << r.out;
  const auto ids1 = rendered(ojson::array({{{"role", "user"}, {"content", "Hello there"}}}));
  EXPECT_NE(r.out.find("forge: turn 1: " + std::to_string(ids1.size()) + " prompt tokens, 0 cached, " +
                       std::to_string(ids1.size()) + " prefilled"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("forge: turn 2: "), std::string::npos) << r.out;
}

TEST_F(ChatCli, ResetStartsOverAndExitEnds) {
  const auto r = chat("Hello there\n/reset\n/frob\nHello there\n/exit\nnever read\n", {"--json"});
  ASSERT_EQ(r.code, 0) << r.out;
  const auto turns = json_lines(r.out);
  ASSERT_EQ(turns.size(), 2u) << r.out;
  EXPECT_EQ(turns[1]["cached_tokens"], 0);
  EXPECT_EQ(turns[1]["prompt_tokens"], turns[0]["prompt_tokens"]);
  EXPECT_EQ(turns[1]["ids"], turns[0]["ids"]);
  EXPECT_EQ(turns[1]["text"], turns[0]["text"]);
  EXPECT_NE(r.out.find("forge: new conversation"), std::string::npos);
  EXPECT_NE(r.out.find("forge: unknown command /frob (/reset, /exit, /quit)"), std::string::npos) << r.out;
  EXPECT_EQ(chat("/quit\n").code, 0);
  EXPECT_EQ(chat("").code, 0);
}

TEST_F(ChatCli, SystemPromptIsRendered) {
  const auto turns = json_lines(chat("Hello there\n", {"--json", "--system", "Be brief."}).out);
  ASSERT_EQ(turns.size(), 1u);
  const auto ids = rendered(ojson::array(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello there"}}}));
  EXPECT_EQ(turns[0]["prompt_tokens"], ids.size());
  expect_same_reply(turns[0], ids);
}

TEST_F(ChatCli, GenerateChatMessagesEqualsTheFirstReply) {
  const auto turns = json_lines(chat("Hello there\n", {"--json"}).out);
  ASSERT_EQ(turns.size(), 1u);
  write_text(dir.path / "messages.json", R"([{"role": "user", "content": "Hello there"}])");
  std::vector<std::string> args = {"generate", "-m", model.string(), "-n", "12", "--device", "cpu", "--chat",
                                   "--messages", (dir.path / "messages.json").string(), "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto r = run_cli(args, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto g = json_lines(r.out);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0]["prompt_ids"].get<std::vector<uint32_t>>(),
            rendered(ojson::array({{{"role", "user"}, {"content", "Hello there"}}})));
  EXPECT_EQ(g[0]["ids"], turns[0]["ids"]);
  EXPECT_EQ(g[0]["text"], turns[0]["text"]);
  // -p as one user message is the same conversation.
  args = {"generate", "-m", model.string(), "-n", "12", "--device", "cpu", "--chat", "-p", "Hello there", "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto p = run_cli(args, dir.path);
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_EQ(json_lines(p.out).at(0)["ids"], turns[0]["ids"]);
  // --messages without --chat is a usage error.
  EXPECT_EQ(run_cli({"generate", "-m", model.string(), "--messages", (dir.path / "messages.json").string()}, dir.path)
                .code,
            2);
}

TEST_F(ChatCli, RepliesEndAtTheTokenTheTemplateEndsTurnsWith) {
  auto r = chat("", {"--verbose"});
  ASSERT_EQ(r.code, 0) << r.out;
  // The model's EOS (config.json: 0) and tokenizer_config.json's eos_token.
  EXPECT_NE(r.out.find("forge: a reply ends at <|endoftext|> (0), <|im_end|> (2)\n"), std::string::npos) << r.out;
  // A template that closes assistant turns with its own token adds it.
  json cfg = json::parse(forge::testing::read_bytes(model / "tokenizer_config.json"));
  cfg["chat_template"] =
      "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
      "{% if m['role'] == 'assistant' %}<|turn_end|>{% else %}<|im_end|>{% endif %}\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  write_text(model / "tokenizer_config.json", cfg.dump());
  r = chat("", {"--verbose"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("forge: a reply ends at <|endoftext|> (0), <|im_end|> (2), <|turn_end|> (3)\n"),
            std::string::npos)
      << r.out;
  r = chat("", {"--verbose", "--ignore-eos"});
  EXPECT_NE(r.out.find("forge: a reply ends at nothing (--ignore-eos)"), std::string::npos) << r.out;
}

TEST_F(ChatCli, RenderedTextIsEncodedWithoutAddedSpecialTokens) {
  // A post-processor that adds a BOS, as Llama tokenizers do (<|im_start|> here).
  json tj = json::parse(forge::testing::read_bytes(model / "tokenizer.json"));
  const json bos = {{"SpecialToken", {{"id", "<|im_start|>"}, {"type_id", 0}}}};
  const json seq = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  tj["post_processor"] = {{"type", "TemplateProcessing"},
                          {"single", {bos, seq}},
                          {"pair", {bos, seq, seq}},
                          {"special_tokens", {{"<|im_start|>", {{"id", "<|im_start|>"}, {"ids", {1}}, {"tokens", {"<|im_start|>"}}}}}}};
  write_text(model / "tokenizer.json", tj.dump());
  auto prompt_ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"generate", "-m", model.string(), "-n", "1", "--device", "cpu", "--json"});
    const auto r = run_cli(args, dir.path);
    EXPECT_EQ(r.code, 0) << r.out;
    return json_lines(r.out).at(0)["prompt_ids"].get<std::vector<uint32_t>>();
  };
  // A plain prompt gets the BOS; the template writes its own, so a chat prompt
  // starts with it once (transformers' apply_chat_template(tokenize=True)).
  EXPECT_EQ(prompt_ids({"-p", "Hello"}).at(0), 1u);
  const auto chat_ids = prompt_ids({"--chat", "-p", "Hello there"});
  ASSERT_GE(chat_ids.size(), 2u);
  EXPECT_EQ(chat_ids[0], 1u);
  EXPECT_NE(chat_ids[1], 1u);
  EXPECT_EQ(chat_ids, rendered(ojson::array({{{"role", "user"}, {"content", "Hello there"}}})));
}

// Without a template, each command says what to do instead: generate
// without --chat, train on text lines (naming the file and line once).
TEST_F(ChatCli, ModelWithoutTemplateSaysWhatToDoInstead) {
  std::filesystem::remove(model / "tokenizer_config.json");
  auto g = run_cli({"generate", "-m", model.string(), "--chat", "-p", "hi", "-n", "2", "--device", "cpu"}, dir.path);
  EXPECT_EQ(g.code, 1) << g.out;
  EXPECT_NE(g.out.find("has no chat template (tokenizer_config.json chat_template or chat_template.jinja); leave out "
                       "--chat"),
            std::string::npos)
      << g.out;
  write_text(dir.path / "talk.jsonl", "{\"text\": \"hello there\"}\n{\"messages\": [{\"role\": \"user\", "
                                      "\"content\": \"hi\"}]}\n");
  g = run_cli({"train", "-m", model.string(), "--data", (dir.path / "talk.jsonl").string(), "--steps", "1", "--device",
               "cpu", "--out", (dir.path / "run").string()},
              dir.path);
  EXPECT_EQ(g.code, 1) << g.out;
  EXPECT_NE(g.out.find("[train] " + (dir.path / "talk.jsonl").string() + ":2: " + model.string() +
                       " has no chat template"),
            std::string::npos)
      << g.out;
  EXPECT_NE(g.out.find("train it on {\"text\"} lines instead of conversations"), std::string::npos) << g.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path / "run"));
}

TEST_F(ChatCli, ModelWithoutTemplateSaysSo) {
  const std::string gpt2 = (fs::path(forge::testing::test_data_dir()) / "gpt2-tiny").string();
  const auto g = run_cli({"chat", "-m", gpt2, "--device", "cpu"}, dir.path);
  EXPECT_EQ(g.code, 1) << g.out;
  EXPECT_NE(g.out.find("has no chat template (tokenizer_config.json chat_template or chat_template.jinja); use forge "
                       "generate"),
            std::string::npos)
      << g.out;
}

// Reads from `fd` into `got` until done() (or EOF, or 60 s pass).
template <class Done>
void read_while_not(int fd, std::string& got, Done done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done() && std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
}

// Reads until `want` has appeared `times` times in all that was read.
void read_until(int fd, std::string& got, const std::string& want, int times) {
  read_while_not(fd, got, [&] {
    int n = 0;
    for (size_t at = got.find(want); at != std::string::npos; at = got.find(want, at + want.size())) ++n;
    return n >= times;
  });
}

std::string without_cr(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '\r'), s.end());
  return s;
}

// `forge chat ARGS` on a pseudo-terminal; returns its pid and the terminal's fd.
pid_t chat_in_terminal(const fs::path& model, const std::vector<std::string>& extra, int* fd) {
  const pid_t pid = ::forkpty(fd, nullptr, nullptr, nullptr);
  if (pid == 0) {
    ::setenv("OMP_NUM_THREADS", "1", 0);
    std::string exe = forge::testing::cli_path();
    std::vector<std::string> args = {exe, "chat", "-m", model.string(), "--device", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(121);
  }
  return pid;
}

int exit_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(ChatCli, InteractiveSessionInATerminal) {
  const auto turns = json_lines(chat("Hello there\n", {"--json"}).out);
  ASSERT_EQ(turns.size(), 1u);
  std::vector<std::string> args = {"-n", "12"};
  args.insert(args.end(), flags.begin(), flags.end());
  int fd = -1;
  const pid_t pid = chat_in_terminal(model, args, &fd);
  ASSERT_GE(pid, 0);
  std::string got;
  read_until(fd, got, "> ", 1);  // the prompt: stdin is a terminal
  ASSERT_NE(got.find("> "), std::string::npos) << got;
  ASSERT_EQ(::write(fd, "Hello there\n", 12), 12);
  read_until(fd, got, "> ", 2);
  ASSERT_EQ(::write(fd, "/exit\n", 6), 6);
  read_until(fd, got, "\x01never", 1);  // to EOF
  EXPECT_EQ(exit_status(pid), 0);
  ::close(fd);
  // The terminal echoes the line, then the streamed reply, then a new prompt.
  const std::string screen = without_cr(got);
  EXPECT_NE(screen.find("> Hello there\n" + without_cr(turns[0]["text"].get<std::string>()) + "\n> "),
            std::string::npos)
      << screen;
}

TEST_F(ChatCli, CtrlCStopsTheReplyNotTheChat) {
  // A reply of up to 184 tokens (the context's room), stopped after its first bytes.
  int fd = -1;
  const pid_t pid = chat_in_terminal(model, {"-n", "400", "--ignore-eos", "--greedy"}, &fd);
  ASSERT_GE(pid, 0);
  std::string got;
  read_until(fd, got, "> ", 1);
  ASSERT_EQ(::write(fd, "Hello there\n", 12), 12);
  read_until(fd, got, "Hello there\r\n", 1);
  const size_t echoed = got.size();
  read_while_not(fd, got, [&] { return got.size() > echoed; });  // the reply has begun
  ASSERT_EQ(::write(fd, "\x03", 1), 1);  // Ctrl-C: the terminal sends SIGINT
  read_until(fd, got, "forge: reply stopped", 1);
  read_until(fd, got, "> ", 2);
  ASSERT_EQ(::write(fd, "/exit\n", 6), 6);
  read_until(fd, got, "\x01never", 1);
  EXPECT_EQ(exit_status(pid), 0) << got;
  ::close(fd);
  EXPECT_NE(got.find("forge: reply stopped"), std::string::npos) << got;
}

}  // namespace
