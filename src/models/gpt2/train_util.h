// Helpers shared by the GPT-2 training files: the counter-based keys of
// models/common/keys.h (dropout, batch sampling) and the attention's options.
#pragma once
#include <cstdint>
#include <string>

#include "forge/gpt2.h"
#include "forge/gpt2_train.h"
#include "forge/ops.h"
#include "models/common/keys.h"

namespace forge::gpt2 {

using models::derive_key;  // models/common/keys.h
using models::mix64;

// A block's causal attention in training, forward and backward alike: the
// attention dropout on its probabilities, keyed by the block's seed.
inline AttentionOptions train_attention(const Gpt2Dropout& dropout, const Gpt2BlockActs& s) {
  AttentionOptions o;
  o.causal = true;
  if (dropout.attn > 0) {
    o.dropout_p = dropout.attn;
    o.dropout_seed = s.seed_attn;
  }
  return o;
}

}  // namespace forge::gpt2
