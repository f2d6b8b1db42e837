// forge generate -m DIR (-p TEXT | --prompt-file F | --prompt-ids 1,2,3) [-n N]
//   [--greedy | --temperature T --top-k K --top-p P] [--seed S] [--stop STR]...
//   [--ignore-eos] [--show-special] [--device D] [--json] [--no-cache]
// Streams the text to stdout as it is produced; with --json nothing is
// streamed and stdout holds one JSON object: prompt_ids, ids (the new ids),
// text, stop reason, seed, tokens/s, device. A model folder without a
// tokenizer needs --prompt-ids; the ids are then streamed space-separated and
// the JSON has no "text" key. Stops at the model's EOS ids, a stop string, or
// after N tokens; a prompt + N beyond the context length stops at the context
// with a notice.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/generate.h"
#include "forge/model.h"
#include "forge/tokenizer.h"
#include "model_arg.h"

namespace forge::cli {
namespace {

struct GenerateArgs {
  std::string model, prompt, prompt_file, prompt_ids, device = "auto";
  int64_t n = 32;
  bool greedy = false, json = false, no_cache = false, ignore_eos = false, show_special = false;
  std::optional<float> temperature, top_p;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
};

bool has_tokenizer(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "tokenizer.json") || std::filesystem::exists(dir / "vocab.json") ||
         std::filesystem::exists(dir / "encoder.json");
}

std::string read_prompt_file(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    if (std::filesystem::is_directory(path)) throw IoError("[generate] --prompt-file " + path + " is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError("[generate] cannot read --prompt-file " + path);
    text << in.rdbuf();
  }
  return text.str();
}

// Finds the stop strings in the text streamed so far; holds back the tail
// that could still become one, so no part of a stop string is ever printed.
class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Adds a piece; returns the text safe to emit. Sets hit() on a match (the
  // text up to the stop string is emitted, the rest dropped).
  std::string push(const std::string& piece) {
    held_ += piece;
    size_t cut = std::string::npos;
    for (const std::string& s : stops_)
      if (size_t at = held_.find(s); at != std::string::npos) cut = std::min(cut, at);
    if (cut != std::string::npos) {
      hit_ = true;
      std::string out = held_.substr(0, cut);
      held_.clear();
      return out;
    }
    size_t keep = 0;  // longest suffix of held_ that is a prefix of a stop string
    for (const std::string& s : stops_)
      for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
        if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
  std::string flush() { return std::exchange(held_, {}); }
  bool hit() const { return hit_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool hit_ = false;
};

void run(const GenerateArgs& a) {
  if (a.greedy && (a.temperature || a.top_k || a.top_p))
    throw ValueError("[generate] --greedy excludes --temperature, --top-k and --top-p");
  if (a.temperature && !(*a.temperature >= 0))
    throw ValueError("[generate] --temperature must be >= 0, got " + std::to_string(*a.temperature));
  if (a.top_p && !(*a.top_p > 0 && *a.top_p <= 1))
    throw ValueError("[generate] --top-p must be in (0, 1], got " + std::to_string(*a.top_p));
  if (a.top_k && *a.top_k < 0) throw ValueError("[generate] --top-k must be >= 0, got " + std::to_string(*a.top_k));
  for (const std::string& s : a.stop)
    if (s.empty()) throw ValueError("[generate] --stop strings must not be empty");
  const Device dev = resolve_devices(a.device)[0];
  const std::filesystem::path dir = model_folder(a.model);
  std::optional<Tokenizer> tok;
  if (has_tokenizer(dir)) tok = Tokenizer::from_dir(dir);
  std::vector<uint32_t> prompt;
  if (!a.prompt_ids.empty()) {
    prompt = parse_id_list(a.prompt_ids, "--prompt-ids");
  } else {
    if (!tok)
      throw IoError("[generate] a text prompt needs a tokenizer in " + a.model +
                    " (tokenizer.json or vocab.json + merges.txt); use --prompt-ids");
    prompt = tok->encode(a.prompt_file.empty() ? a.prompt : read_prompt_file(a.prompt_file));
    if (prompt.empty()) throw ValueError("[generate] the prompt is empty");
  }
  if (!a.stop.empty() && !tok) throw ValueError("[generate] --stop needs a tokenizer in " + a.model);
  std::unique_ptr<CausalLM> model = load_model(dir, dev);

  GenerateOptions o;
  o.max_new_tokens = a.n;
  o.use_cache = !a.no_cache;
  const bool sampling = !a.greedy && (a.temperature || a.top_k || a.top_p);
  if (sampling) {
    o.sample.temperature = a.temperature.value_or(1.0f);
    o.sample.top_k = a.top_k.value_or(0);
    o.sample.top_p = a.top_p.value_or(1.0f);
  }
  // A fresh seed per run when sampling, reported so the run can be repeated.
  o.sample.seed = a.seed ? *a.seed : (sampling ? std::random_device{}() : 0);
  if (sampling && !a.seed) std::fprintf(stderr, "forge: sampling with --seed %llu\n", (unsigned long long)o.sample.seed);
  if (!a.ignore_eos) {
    o.stop_ids = model->info().eos;
    if (o.stop_ids.empty() && tok && tok->eos_id()) o.stop_ids = {*tok->eos_id()};
  }
  const int64_t room = model->context_length() - int64_t(prompt.size());
  if (room < 1)
    throw ValueError("[generate] the prompt of " + std::to_string(prompt.size()) +
                     " tokens fills the context length " + std::to_string(model->context_length()));
  bool context_full = false;
  if (o.max_new_tokens > room) {
    o.max_new_tokens = room;
    context_full = true;
  }

  std::optional<StreamDecoder> stream;
  if (tok) stream.emplace(*tok, !a.show_special);
  StopStrings stops(a.stop);
  std::string text;
  auto emit = [&](const std::string& s) {
    text += s;
    if (!a.json) {
      std::fputs(s.c_str(), stdout);
      std::fflush(stdout);
    }
  };
  auto on_token = [&](uint32_t id) {
    if (!stream) {
      emit(std::to_string(id) + " ");
      return true;
    }
    emit(stops.push(stream->push(id)));
    return !stops.hit();
  };
  GenerateStats st;
  std::vector<uint32_t> ids = generate(*model, prompt, o, on_token, &st);
  if (stream && !stops.hit()) emit(stops.push(stream->flush()) + stops.flush());
  std::string reason = "length";
  if (stops.hit()) reason = "stop";
  else if (!ids.empty() && std::find(o.stop_ids.begin(), o.stop_ids.end(), ids.back()) != o.stop_ids.end()) reason = "eos";
  else if (context_full) reason = "context";
  if (!a.json) std::fputs("\n", stdout);
  if (reason == "context")
    std::fprintf(stderr, "forge: stopped at the context length %lld\n", (long long)model->context_length());
  const double prefill = st.prefill_s > 0 ? double(st.prefill_tokens) / st.prefill_s : 0.0;
  const double decode = st.decode_s > 0 ? double(st.decode_tokens) / st.decode_s : 0.0;
  std::fprintf(stderr, "forge: %zu tokens; prefill %.1f tokens/s, decode %.1f tokens/s on %s\n", ids.size(), prefill,
               decode, dev.name().c_str());
  if (a.json) {
    nlohmann::json j{{"prompt_ids", prompt},
                     {"ids", ids},
                     {"stop_reason", reason},
                     {"seed", o.sample.seed},
                     {"prefill_tokens_per_s", prefill},
                     {"decode_tokens_per_s", decode},
                     {"device", dev.name()}};
    if (tok) j["text"] = text;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fflush(stdout);
}

const bool registered = register_command(
    {"generate", "Generate text with a model of any family, streamed to stdout", [](CLI::App& sub) {
       static GenerateArgs a;
       sub.add_option("-m,--model", a.model, "Model folder (config.json + safetensors [+ tokenizer]), or a Hugging Face id org/name[@revision]")->required();
       auto* prompt = sub.add_option_group("prompt", "what to continue");
       prompt->add_option("-p,--prompt", a.prompt, "Prompt text (needs a tokenizer in the model folder)");
       prompt->add_option("--prompt-file", a.prompt_file, "Read the prompt text from a file (- for stdin)");
       prompt->add_option("--prompt-ids", a.prompt_ids, "Prompt token ids: 1,2,3 or \"1 2 3\"");
       prompt->require_option(1);
       check_at_least(sub.add_option("-n,--max-new-tokens", a.n, "Tokens to generate")->capture_default_str(), 0);
       sub.add_flag("--greedy", a.greedy, "Pick the most likely token (the default without sampling flags)");
       sub.add_option("--temperature", a.temperature, "Sampling temperature (0: greedy)");
       sub.add_option("--top-k", a.top_k, "Keep the K most likely tokens (0: all)");
       sub.add_option("--top-p", a.top_p, "Keep the most likely tokens up to probability mass P, in (0, 1]");
       sub.add_option("--seed", a.seed, "Seed of the sampling draws (default: a random one, reported)");
       sub.add_option("--stop", a.stop, "Stop when the text produces this string (repeatable)");
       sub.add_flag("--ignore-eos", a.ignore_eos, "Keep generating past the end-of-sequence token");
       sub.add_flag("--show-special", a.show_special, "Print special tokens such as <|endoftext|> in the text");
       add_device_option(sub, a.device);
       sub.add_flag("--json", a.json, "Print one JSON object (ids, text, tokens/s, device) and nothing else");
       sub.add_flag("--no-cache", a.no_cache, "Recompute the whole sequence for every token (no KV cache)");
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
