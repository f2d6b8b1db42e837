#include "gen_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "cli_util.h"
#include "forge/error.h"

namespace forge::cli {

void add_sampling_options(CLI::App& sub, SamplingArgs& a, const std::string& n_help) {
  check_at_least(sub.add_option("-n,--max-new-tokens", a.n, n_help)->capture_default_str(), 0);
  sub.add_flag("--greedy", a.greedy, "Pick the most likely token (the default without sampling flags)");
  sub.add_option("--temperature", a.temperature, "Sampling temperature (0: greedy)");
  sub.add_option("--top-k", a.top_k, "Keep the K most likely tokens (0: all)");
  sub.add_option("--top-p", a.top_p, "Keep the most likely tokens up to probability mass P, in (0, 1]");
  sub.add_option("--min-p", a.min_p, "Keep the tokens at least P times as likely as the most likely one, in [0, 1] (0: off)");
  sub.add_option("--repeat-penalty", a.repeat_penalty,
                 "Penalise the ids of the recent context: positive logits divided by R, negative ones "
                 "multiplied (1: off)");
  check_at_least(sub.add_option("--repeat-last-n", a.repeat_last_n,
                                "Ids the repeat penalty looks back on, prompt included (-1: the context length)"),
                 -1);
  check_unsigned(sub.add_option("--seed", a.seed, "Seed of the sampling draws (default: a random one, reported)"));
  sub.add_option("--stop", a.stop, "Stop when the text produces this string (repeatable)");
  sub.add_flag("--ignore-eos", a.ignore_eos, "Keep generating past the end-of-sequence token");
  sub.add_flag("--show-special", a.show_special, "Print special tokens such as <|endoftext|> in the text");
}

namespace {

// 2 for 2.0f, 0.05 for 0.05f, inf, nan: a value as the user typed it.
std::string readable(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(v));
  return buf;
}

}  // namespace

GenerateOptions sampling_options(const SamplingArgs& a) {
  // Values and combinations of these flags are usage errors (exit 2), as
  // every command's are.
  if (a.greedy && (a.temperature || a.top_k || a.top_p || a.min_p))
    throw UsageError("--greedy excludes --temperature, --top-k, --top-p and --min-p");
  if (a.min_p && !(*a.min_p >= 0 && *a.min_p <= 1))
    throw UsageError("--min-p must be in [0, 1], got " + readable(*a.min_p));
  if (!(a.repeat_penalty > 0) || !std::isfinite(a.repeat_penalty))
    throw UsageError("--repeat-penalty must be finite and > 0, got " + readable(a.repeat_penalty));
  if (a.temperature && !(*a.temperature >= 0 && std::isfinite(*a.temperature)))
    throw UsageError("--temperature must be finite and >= 0, got " + readable(*a.temperature));
  if (a.top_p && !(*a.top_p > 0 && *a.top_p <= 1))
    throw UsageError("--top-p must be in (0, 1], got " + readable(*a.top_p));
  if (a.top_k && *a.top_k < 0) throw UsageError("--top-k must be >= 0, got " + std::to_string(*a.top_k));
  for (const std::string& s : a.stop)
    if (s.empty()) throw UsageError("--stop strings must not be empty");
  GenerateOptions o;
  o.max_new_tokens = a.n;
  const bool sampling = !a.greedy && (a.temperature || a.top_k || a.top_p || a.min_p);
  if (sampling) {
    o.sample.temperature = a.temperature.value_or(1.0f);
    o.sample.top_k = a.top_k.value_or(0);
    o.sample.top_p = a.top_p.value_or(1.0f);
    o.sample.min_p = a.min_p.value_or(0.0f);
  }
  o.sample.repeat_penalty = a.repeat_penalty;
  o.repeat_last_n = a.repeat_last_n;
  // A fresh seed per run when sampling, reported so the run can be repeated.
  o.sample.seed = a.seed ? *a.seed : (sampling ? std::random_device{}() : 0);
  if (sampling && !a.seed) std::fprintf(stderr, "forge: sampling with --seed %llu\n", (unsigned long long)o.sample.seed);
  return o;
}

std::string StopStrings::push(const std::string& piece) {
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

ReplyPrinter::ReplyPrinter(const Tokenizer* tok, const SamplingArgs& a, bool print) : stops_(a.stop), print_(print) {
  if (tok) stream_.emplace(*tok, !a.show_special);
}

void ReplyPrinter::emit(const std::string& s) {
  text_ += s;
  if (print_ && !s.empty()) {
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
  }
}

bool ReplyPrinter::push(uint32_t id) {
  if (!stream_) {
    emit(std::to_string(id) + " ");
    return true;
  }
  emit(stops_.push(stream_->push(id)));
  return !stops_.hit();
}

void ReplyPrinter::finish() {
  if (stream_ && !stops_.hit()) emit(stops_.push(stream_->flush()) + stops_.flush());
}

std::string stop_reason(const ReplyPrinter& out, const std::vector<uint32_t>& ids,
                        const std::vector<uint32_t>& stop_ids, bool context_full) {
  if (out.stopped()) return "stop";
  if (!ids.empty() && std::find(stop_ids.begin(), stop_ids.end(), ids.back()) != stop_ids.end()) return "eos";
  if (context_full) return "context";
  return "length";
}

}  // namespace forge::cli
