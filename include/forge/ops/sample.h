// The sample family: drawing the next token from a row of logits, on the
// device that holds them, so a decode loop reads back one id per row and
// nothing else (see forge/ops.h for the conventions every op follows).
//
// Per row of logits z [V], with keys ordered as the f32 values:
//  0. repeat penalty (repeat_penalty != 1, with a window of recent ids): each
//     id of the window (ids >= V are empty slots and skipped) has its logit
//     z > 0 multiplied by f32(1 / repeat_penalty) (rounded once on the host)
//     and z < 0 multiplied by repeat_penalty, once however often it occurs;
//     every later step sees the penalised logits (greedy included).
//  1. greedy (temperature == 0): the index of the largest logit, the lowest
//     index among equal ones.
//  2. top-k (0 < top_k < V): keep the top_k largest logits; among logits
//     equal to the k-th largest, the lowest indices are kept first.
//  3. weights w_i = exp(z_i * (1 / temperature) - max), the product rounded
//     in f32 and 1 / temperature computed in double on the host.
//  4. top-p (top_p < 1): keep the largest logits down to the highest value
//     threshold t at which the kept weight with z >= t reaches top_p of the
//     weight kept by step 2 (so equal logits at t are all kept).
//  5. min-p (min_p > 0): of the tokens kept so far, keep those whose weight
//     w_i (the probability over the largest one's) is >= min_p.
//  6. draw: u = (word0 >> 8) * 2^-24 where word0 is word 0 of Philox4x32-10
//     with counter (step mod 2^32, row, 0, 0) and key (seed mod 2^32,
//     seed div 2^32); the result is the lowest index j whose kept prefix sum
//     sum_{i <= j} w_i exceeds u * sum(kept w).
// Thresholds are found by a bitwise search over the ordered keys (counts and
// sums per pass), not by sorting. Sums are accumulated in the order of a
// 256-lane strided reduction on both backends; the backends' exp can differ in
// the last bit, so a draw whose u lies within rounding of a boundary may pick a
// neighbouring token on the other backend (likewise a weight within rounding
// of min_p). Greedy, the penalised logits and the kept sets of top-k are exact
// on both.
//
// A row holding a NaN or +inf (weights that are not finite, or a forward pass
// that overflowed) has no next token: its id is kSampleNoToken, past every
// vocabulary, so a loop that reads ids back can name the failure, and a step
// recorded ahead on the device (whose embedding gathers NaN for an id out of
// range) carries it on instead of computing from a made-up token. -inf is a
// masked logit and is allowed.
#pragma once
#include <cstdint>

#include "forge/ops/core.h"

namespace forge {

// The id of a row whose logits are not finite (see above).
constexpr uint32_t kSampleNoToken = 0xFFFFFFFFu;

struct SampleOptions {
  float temperature = 0.0f;  // 0: greedy (the other fields are ignored)
  int64_t top_k = 0;         // 0 or >= V: off
  float top_p = 1.0f;        // in (0, 1]; 1: off
  uint64_t seed = 0;         // the Philox key
  uint64_t step = 0;         // the Philox counter: a decode loop's token index
  float min_p = 0.0f;           // in [0, 1]; 0: off
  float repeat_penalty = 1.0f;  // finite and > 0; 1: off (applies only with a window)
};

// logits [V] or [B, V] f32 -> ids u32 [1] or [B], on the logits' device
// (kSampleNoToken for a row with a NaN or +inf).
// ValueError for a negative temperature, top_k < 0, top_p outside (0, 1],
// min_p outside [0, 1] or a repeat_penalty that is not finite and > 0.
Tensor sample(const Tensor& logits, const SampleOptions& options = {});

// As above with the repeat penalty over `recent`: u32 [N] (one row) or [B, N],
// on the logits' device, the ids of each row's recent context in any order;
// slots holding an id >= V are empty. A decode loop keeps it on the device as
// a ring (slot = position % N) written with copy_tensor.
Tensor sample(const Tensor& logits, const SampleOptions& options, const Tensor& recent);

// The uniform number step 5 draws for (seed, step, row), for tests and hosts.
float sample_uniform(uint64_t seed, uint64_t step, uint32_t row);

}  // namespace forge
