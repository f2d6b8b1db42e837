// forge chat -m DIR [--system TEXT] [-n N] [--greedy | --temperature T --top-k K
//   --top-p P --min-p P] [--repeat-penalty R [--repeat-last-n N]] [--seed S] [--stop STR]...
//   [--context N] [--device D] [--json] [--verbose]
// A terminal chat: each line on stdin is a user turn; the reply streams to
// stdout. The conversation is rendered with the model's chat template, and the
// KV cache is kept across turns: a turn prefills only the ids after the
// longest common prefix of what the cache holds and the new rendering (the
// whole new turn for prefix-stable templates). /reset starts a new
// conversation, /exit or /quit (or EOF) ends; another /word is refused.
// Ctrl-C during a reply stops the reply (the partial reply stays in the
// conversation); at the prompt it ends the program as usual. The "> " prompt goes to stderr,
// and only when stdin is a terminal, so piped output holds the replies alone.
// --json prints one JSON object per turn instead of the streamed text.
// --verbose reports the ids a reply ends at and each turn's prefill counts.
// --context caps the positions a conversation may use (the KV cache holds
// them all; a model's own context can be 128K).
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "chat_prompt.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/generate.h"
#include "forge/model.h"
#include "forge/tokenizer.h"
#include "gen_options.h"
#include "interrupt.h"
#include "model_arg.h"

namespace forge::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct ChatArgs {
  std::string model, system, device = "auto";
  std::string adapter;  // --adapter: a LoRA adapter folder
  std::string dtype = "f32";  // --dtype: dense weights on the device
  int64_t context = 4096;
  bool json = false, verbose = false;
  SamplingArgs sampling;
};

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// One conversation and the KV cache that holds its ids so far.
class Conversation {
 public:
  Conversation(const CausalLM& model, const Tokenizer& tok, const ChatTemplate& tmpl, std::string system,
               int64_t capacity)
      : tok_(tok), tmpl_(tmpl), system_(std::move(system)), cache_(model.new_cache(1, capacity)) {
    reset();
  }

  void reset() {
    messages_ = ojson::array();
    if (!system_.empty()) messages_.push_back({{"role", "system"}, {"content", system_}});
    fed_.clear();
    cache_.len = 0;
  }

  // The ids of the conversation with `user` added and the generation prompt.
  std::vector<uint32_t> render_with(const std::string& user) const {
    ojson m = messages_;
    m.push_back({{"role", "user"}, {"content", user}});
    std::vector<uint32_t> ids = encode_rendered(tok_, tmpl_.render(m, /*add_generation_prompt=*/true));
    if (ids.empty()) throw ValueError("[chat] the chat template rendered the conversation as empty text");
    return ids;
  }

  // Keeps the cached ids that `ids` starts with (at least one id is left to
  // prefill) and returns how many; positions past cache.len are overwritten
  // by what is fed next.
  int64_t reuse_prefix(const std::vector<uint32_t>& ids) {
    size_t k = std::mismatch(fed_.begin(), fed_.end(), ids.begin(), ids.end()).first - fed_.begin();
    k = std::min(k, ids.size() - 1);
    // A ring cache that has wrapped no longer holds the early positions.
    if (cache_.ring && cache_.len > cache_.capacity && k < fed_.size()) k = 0;
    fed_.resize(k);
    cache_.len = int64_t(k);
    return int64_t(k);
  }

  // Records a finished turn: the ids now in the cache and the messages.
  void add_turn(const std::string& user, const std::vector<uint32_t>& ids, const std::vector<uint32_t>& reply,
                const std::string& reply_text) {
    fed_ = ids;
    fed_.insert(fed_.end(), reply.begin(), reply.end());
    fed_.resize(size_t(cache_.len));  // the last id is produced but not fed
    messages_.push_back({{"role", "user"}, {"content", user}});
    messages_.push_back({{"role", "assistant"}, {"content", reply_text}});
  }

  KvCache& cache() { return cache_; }

 private:
  const Tokenizer& tok_;
  const ChatTemplate& tmpl_;
  std::string system_;
  ojson messages_;
  KvCache cache_;
  std::vector<uint32_t> fed_;  // the ids at cache positions 0 .. len-1
};

void run(const ChatArgs& a) {
  GenerateOptions o = sampling_options(a.sampling);
  const Device dev = resolve_devices(a.device)[0];
  const std::filesystem::path dir = model_folder(a.model);
  const ChatTemplate tmpl = load_chat_template(dir, a.model, "chat");
  const Tokenizer tok = Tokenizer::from_dir(dir);
  std::unique_ptr<CausalLM> model = load_model_and_adapter(dir, dev, a.adapter, weights_dtype(a.dtype));
  if (!a.sampling.ignore_eos) o.stop_ids = chat_stop_ids(*model, tok, tmpl);
  if (a.verbose) {
    std::string ends;
    for (uint32_t id : o.stop_ids)
      ends += (ends.empty() ? "" : ", ") + tok.decode(std::vector<uint32_t>{id}) + " (" + std::to_string(id) + ")";
    std::fprintf(stderr, "forge: a reply ends at %s\n", ends.empty() ? "nothing (--ignore-eos)" : ends.c_str());
  }
  // The positions a conversation may use; the cache holds them all (a
  // sliding-window model's ring holds the window and wraps).
  const int64_t ctx = std::min(a.context, model->context_length());
  Conversation conv(*model, tok, tmpl, a.system, ctx);
  o.cache = &conv.cache();
  const bool tty = ::isatty(0);
  int turn = 0;

  for (std::string line;;) {
    if (tty) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) {
      if (tty) std::fputs("\n", stderr);
      break;
    }
    const std::string user = trimmed(line);
    if (user.empty()) continue;
    if (user == "/exit" || user == "/quit") break;
    if (user == "/reset") {
      conv.reset();
      std::fputs("forge: new conversation\n", stderr);
      continue;
    }
    if (user[0] == '/' && user.find(' ') == std::string::npos) {
      std::fprintf(stderr, "forge: unknown command %s (/reset, /exit, /quit)\n", user.c_str());
      continue;
    }
    std::vector<uint32_t> ids = conv.render_with(user);
    if (int64_t(ids.size()) >= ctx) {
      std::fprintf(stderr, "forge: the conversation fills the context (%lld positions); starting a new conversation\n",
                   (long long)ctx);
      conv.reset();
      ids = conv.render_with(user);
      if (int64_t(ids.size()) >= ctx) {
        std::fprintf(stderr, "forge: the message of %zu tokens does not fit the context (%lld positions)\n", ids.size(),
                     (long long)ctx);
        continue;
      }
    }
    const int64_t cached = conv.reuse_prefix(ids);
    const std::vector<uint32_t> fresh(ids.begin() + cached, ids.end());
    o.cached_ids.assign(ids.begin(), ids.begin() + cached);  // the repeat penalty looks back on them
    const int64_t room = ctx - int64_t(ids.size());
    const bool context_full = a.sampling.n > room;
    o.max_new_tokens = std::min(a.sampling.n, room);

    ReplyPrinter out(&tok, a.sampling, !a.json);
    GenerateStats st;
    std::vector<uint32_t> reply;
    int sig = 0;
    {
      // Ctrl-C stops the reply, not the chat (a second one ends the program).
      StopSignals signals;
      reply = generate(*model, fresh, o, [&](uint32_t id) { return out.push(id) && !signals.received(); }, &st);
      sig = signals.received();
    }
    out.finish();
    if (!a.json) {
      std::fputs("\n", stdout);
      std::fflush(stdout);
    }
    if (sig == SIGTERM) throw ExitCode{128 + sig};
    if (sig) std::fputs("forge: reply stopped\n", stderr);
    const std::string reason = sig ? "interrupted" : stop_reason(out, reply, o.stop_ids, context_full);
    // The reply as the conversation keeps it: its text without special tokens.
    std::string content = out.text();
    if (a.sampling.show_special) {
      std::vector<uint32_t> r = reply;
      if (reason == "eos") r.pop_back();
      content = tok.decode(r, /*skip_special=*/true);
    }
    conv.add_turn(user, ids, reply, content);
    ++turn;
    const double decode = st.decode_s > 0 ? double(st.decode_tokens) / st.decode_s : 0.0;
    if (a.verbose)
      std::fprintf(stderr, "forge: turn %d: %zu prompt tokens, %lld cached, %zu prefilled; %zu new, %.1f tokens/s\n",
                   turn, ids.size(), (long long)cached, fresh.size(), reply.size(), decode);
    if (a.json) {
      ojson j{{"turn", turn},           {"prompt_tokens", ids.size()}, {"cached_tokens", cached},
              {"prefill_tokens", fresh.size()}, {"ids", reply},      {"text", out.text()},
              {"stop_reason", reason},  {"seed", o.sample.seed}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      std::fflush(stdout);
    }
    if (reason == "context") {
      std::fprintf(stderr, "forge: the context (%lld positions) is full; starting a new conversation\n", (long long)ctx);
      conv.reset();
    }
  }
}

const bool registered = register_command(
    {"chat", "Chat with an instruct model in the terminal (its chat template, streamed replies)", [](CLI::App& sub) {
       static ChatArgs a;
       sub.add_option("-m,--model", a.model,
                      "Model folder with a tokenizer and a chat template, or a Hugging Face id org/name[@revision]")
           ->required();
       sub.add_option("--adapter", a.adapter, "A LoRA adapter folder (PEFT layout) to apply to the model");
       add_dtype_option(sub, a.dtype);
       may_be_empty(sub.add_option("--system", a.system, "A system prompt that opens the conversation"));
       a.sampling.n = 512;
       add_sampling_options(sub, a.sampling, "Most tokens per reply");
       check_at_least(sub.add_option("--context", a.context,
                                     "Positions a conversation may use, at most the model's context length")
                          ->capture_default_str(),
                      2);
       add_device_option(sub, a.device);
       sub.add_flag("--json", a.json, "Print one JSON object per turn (ids, text, prefill counts) instead of the text");
       sub.add_flag("-v,--verbose", a.verbose, "Report each turn's prompt, cached and prefilled tokens on stderr");
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
