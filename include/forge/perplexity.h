// Loss and perplexity of a causal LM over a long token sequence, with the
// sliding window of Hugging Face's perplexity guide: windows of `context` ids
// start every `stride` ids, and each scores only the ids the previous window
// did not (an id is scored from the window where it first appears after
// another id of that window). stride == context gives disjoint windows, whose
// first ids then go unscored; a smaller stride gives each id more context.
//
//   forge::PerplexityResult r = forge::perplexity(*model, ids, {.context = 512, .stride = 256});
//   std::printf("%.3f\n", r.perplexity());
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "forge/model.h"

namespace forge {

struct PerplexityOptions {
  int64_t context = 0;  // ids per window, in [2, the model's context length]; 0: the model's
  int64_t stride = 0;   // in [1, context]; 0: context
};

struct PerplexityResult {
  double nll_sum = 0;   // summed -log p of the scored ids
  int64_t tokens = 0;   // ids scored
  int64_t windows = 0;  // forward passes run
  int64_t context = 0, stride = 0;  // as used
  double loss() const { return tokens ? nll_sum / double(tokens) : 0.0; }
  double perplexity() const { return std::exp(loss()); }
};

// ValueError for fewer than 2 ids, an id >= V, or a context or stride out of range.
PerplexityResult perplexity(const CausalLM& model, const std::vector<uint32_t>& ids, const PerplexityOptions& options = {});

}  // namespace forge
