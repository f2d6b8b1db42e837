// CausalLM's per-row calls for a family without continuous batching.
#include "forge/model.h"

namespace forge {

Tensor CausalLM::prefill_row(const Tensor&, KvCache&, int64_t) const {
  throw ValueError("[" + info_.family + "] has no per-row decode (continuous batching)");
}

Tensor CausalLM::decode_rows(const Tensor&, KvCache&, const std::vector<int64_t>&) const {
  throw ValueError("[" + info_.family + "] has no per-row decode (continuous batching)");
}

}  // namespace forge
