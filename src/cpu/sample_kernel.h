// CPU kernel of sample (forge/ops/sample.h).
#pragma once
#include "forge/tensor.h"
#include "ops/sample_plan.h"

namespace forge::cpu {

// logits [rows, vocab] f32 -> out [rows] u32.
void sample(const Tensor& logits, const SamplePlan& plan, Tensor& out);

// logits [rows, vocab], recent [rows, window] u32 -> out [rows, vocab]: the
// logits with repeat_penalized applied at each recent id < vocab.
void repeat_penalty(const Tensor& logits, const Tensor& recent, const PenaltyPlan& plan, Tensor& out);

}  // namespace forge::cpu
