// One generation loop for every model family: prefill the prompt into the KV
// cache, then one step per token whose sampled id stays on the device and
// feeds the next step; only the id is read back, and on WebGPU the next step
// is submitted before that read waits, so the device always has work queued.
//
//   forge::GenerateOptions o;
//   o.max_new_tokens = 64;
//   o.stop_ids = model->info().eos;
//   auto ids = forge::generate(*model, prompt, o, [](uint32_t id) { return true; });
//
// Threads: generate may run from several threads at once on one model (see
// forge/model.h); a given options.cache belongs to one call at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "forge/model.h"
#include "forge/ops/sample.h"

namespace forge {

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  SampleOptions sample;             // temperature 0: greedy; sample.step is set per token
  bool use_cache = true;            // false: recompute the whole sequence per token
  std::vector<uint32_t> stop_ids;   // stop after producing any of these (EOS)
  // sample.repeat_penalty applies to the last repeat_last_n ids (prompt
  // included; -1: the context length), kept on the device as a ring.
  int64_t repeat_last_n = 64;
  // When the context fills: false stops (so prompt + max_new_tokens must fit);
  // true keeps the first `keep` prompt ids, drops half of the ids after them
  // and re-prefills the rest (as llama.cpp's context shift), then continues.
  bool context_shift = false;
  int64_t keep = 0;                 // clamped to the prompt length
  // Continue a conversation: the prompt is appended to this cache (its
  // earlier positions are not recomputed) and the new tokens stay in it.
  // Null: a fresh cache sized for prompt + max_new_tokens.
  KvCache* cache = nullptr;
  // With a cache: the ids it holds (at least the last repeat_last_n), which
  // the repeat penalty's window looks back on before the prompt.
  std::vector<uint32_t> cached_ids;
};

// Why generation stops at generated token `index` (0: the one after the
// prompt) whose logits hold a NaN or +inf: shared by every decode loop.
std::string non_finite_logits_message(int64_t index);

struct GenerateStats {
  int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_s = 0, decode_s = 0;  // wall time, device work included
  double decode_wait_s = 0;  // of decode_s, the host blocked on reading ids back
};

// Called with each new id as soon as it is read back; returning false stops
// generation after that id (a stop string was completed, say).
using TokenCallback = std::function<bool(uint32_t)>;

// Generates up to max_new_tokens ids after `prompt` (batch 1). ValueError for
// an empty prompt, an id >= V, prompt + max_new_tokens beyond the context
// length without context_shift, a prompt that fills the context with it, a
// keep that leaves nothing to drop, or context_shift with a given cache.
// ValueError (non_finite_logits_message) when a sampled row of logits is not
// finite (kSampleNoToken, forge/ops/sample.h).
std::vector<uint32_t> generate(const CausalLM& model, const std::vector<uint32_t>& prompt,
                               const GenerateOptions& options, const TokenCallback& on_token = {},
                               GenerateStats* stats = nullptr);

}  // namespace forge
