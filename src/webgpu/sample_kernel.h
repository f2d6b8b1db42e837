// WebGPU host side of sample (shaders/sample.wgsl).
#pragma once
#include "forge/tensor.h"
#include "ops/sample_plan.h"

namespace forge::webgpu {

// logits [rows, vocab] f32 -> out [rows] u32, one workgroup per row.
void sample(const Tensor& logits, const SamplePlan& plan, Tensor& out);

// logits [rows, vocab], recent [rows, window] u32 -> out [rows, vocab], one
// workgroup per row (shaders/repeat_penalty.wgsl).
void repeat_penalty(const Tensor& logits, const Tensor& recent, const PenaltyPlan& plan, Tensor& out);

}  // namespace forge::webgpu
