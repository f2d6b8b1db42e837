// What `forge generate` and `forge chat` share: the sampling flags with their
// checks, the stop ids, and the printer that streams a reply through the
// tokenizer's stream decoder and the --stop strings.
//
//   SamplingArgs s;
//   add_sampling_options(sub, s, 32);
//   GenerateOptions o = sampling_options(s);   // after parsing
//   ReplyPrinter out(&tok, s, /*print=*/true);
//   generate(model, prompt, o, [&](uint32_t id) { return out.push(id); });
//   out.finish();
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "forge/generate.h"
#include "forge/tokenizer.h"

namespace forge::cli {

struct SamplingArgs {
  int64_t n = 32;
  bool greedy = false, ignore_eos = false, show_special = false;
  std::optional<float> temperature, top_p, min_p;
  std::optional<int64_t> top_k;
  float repeat_penalty = 1.0f;
  int64_t repeat_last_n = 64;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
};

// -n, --greedy, --temperature, --top-k, --top-p, --min-p, --repeat-penalty,
// --repeat-last-n, --seed, --stop, --ignore-eos, --show-special; `n_help`
// says what -n counts.
void add_sampling_options(CLI::App& app, SamplingArgs& a, const std::string& n_help);

// Checks the flags (UsageError "--top-p must be in (0, 1], got 2" for a bad
// value or --greedy with a sampling flag) and returns the options they give:
// max_new_tokens, sampling (--min-p samples too) or greedy, the repeat
// penalty (greedy or not), and the seed (a random one when sampling without
// --seed, reported on stderr).
GenerateOptions sampling_options(const SamplingArgs& a);

// Finds the stop strings in the text streamed so far; holds back the tail
// that could still become one, so no part of a stop string is ever printed.
class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Adds a piece; returns the text safe to emit. Sets hit() on a match (the
  // text up to the stop string is emitted, the rest dropped).
  std::string push(const std::string& piece);
  std::string flush() { return std::exchange(held_, {}); }
  bool hit() const { return hit_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool hit_ = false;
};

// Streams generated ids as text to stdout (when `print`) and collects it.
// Without a tokenizer the ids are written space-separated. Special tokens are
// hidden unless --show-special.
class ReplyPrinter {
 public:
  ReplyPrinter(const Tokenizer* tok, const SamplingArgs& a, bool print);
  // Takes one id; false once a stop string is complete (generation should stop).
  bool push(uint32_t id);
  // Emits what the decoder and the stop strings still hold.
  void finish();
  const std::string& text() const { return text_; }
  bool stopped() const { return stops_.hit(); }

 private:
  void emit(const std::string& s);
  std::optional<StreamDecoder> stream_;
  StopStrings stops_;
  bool print_;
  std::string text_;
};

// Why generation ended: "stop" (a stop string), "eos" (a stop id), "context"
// (cut at the context length), else "length".
std::string stop_reason(const ReplyPrinter& out, const std::vector<uint32_t>& ids,
                        const std::vector<uint32_t>& stop_ids, bool context_full);

}  // namespace forge::cli
