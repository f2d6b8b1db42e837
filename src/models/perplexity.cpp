// Sliding-window loss over a token sequence (forge/perplexity.h), for any CausalLM.
#include "forge/perplexity.h"

#include <algorithm>
#include <string>

#include "forge/error.h"
#include "forge/ops.h"

namespace forge {

PerplexityResult perplexity(const CausalLM& model, const std::vector<uint32_t>& ids, const PerplexityOptions& o) {
  const std::string who = "[perplexity]";
  const int64_t T = int64_t(ids.size()), V = model.vocab_size(), max_ctx = model.context_length();
  if (T < 2) throw ValueError(who + " needs at least 2 token ids, got " + std::to_string(T));
  for (size_t i = 0; i < ids.size(); ++i)
    if (int64_t(ids[i]) >= V)
      throw ValueError(who + " id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                       " is out of range for vocab size " + std::to_string(V));
  PerplexityResult r;
  r.context = o.context ? o.context : max_ctx;
  if (r.context < 2 || r.context > max_ctx)
    throw ValueError(who + " context must be in [2, " + std::to_string(max_ctx) + "] (the model's " +
                     model.info().context_key + "), got " + std::to_string(r.context));
  r.stride = o.stride ? o.stride : r.context;
  if (r.stride < 1 || r.stride > r.context)
    throw ValueError(who + " stride must be in [1, " + std::to_string(r.context) + "] (the context), got " +
                     std::to_string(r.stride));
  int64_t prev_end = 0;
  for (int64_t begin = 0;; begin += r.stride) {
    const int64_t end = std::min(begin + r.context, T), W = end - begin;
    const int64_t first = std::max(prev_end, begin + 1);  // the first id this window scores
    if (first < end) {
      // Row t of the logits predicts id begin + t + 1; the last row predicts nothing.
      std::vector<uint32_t> labels(size_t(W), 0u);
      for (int64_t t = 0; t + 1 < W; ++t) labels[size_t(t)] = ids[size_t(begin + t + 1)];
      Tensor window = Tensor::from_vector(std::vector<uint32_t>(ids.begin() + begin, ids.begin() + end), {1, W});
      Tensor logits = model.forward(window).reshape({W, V});
      Tensor targets = Tensor::from_vector(labels, {W}).to(logits.device());
      const std::vector<float> nll = cross_entropy_loss(logits, targets).to_vector<float>();  // [W]
      for (int64_t id = first; id < end; ++id) r.nll_sum += double(nll[size_t(id - 1 - begin)]);
      r.tokens += end - first;
      ++r.windows;
    }
    prev_end = end;
    if (end == T) break;
  }
  return r;
}

}  // namespace forge
