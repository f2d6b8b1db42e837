// Parity-mode training (`forge train --fixed-batch`, the page's train()): the
// same batch every step, Hugging Face's shifted labels, for any family that
// trains (GPT-2 with Gpt2Trainer, the Llama family with LlamaTrainer).
//
//   forge::FixedBatchTrainer t(*model, forge::fixed_batch_config(1e-3, 0.01, 10));
//   for (int s = 0; s < 10; ++s) losses.push_back(t.step(ids).loss);   // ids [B, T]
#pragma once
#include <cstdint>
#include <memory>

#include "forge/gpt2_train.h"
#include "forge/model.h"
#include "forge/train.h"

namespace forge {

// The parity schedule: constant `lr` over `steps` steps, no warmup, no
// dropout, no clipping, weight decay on every parameter.
Gpt2TrainConfig fixed_batch_config(double lr, double weight_decay, int64_t steps);

class FixedBatchTrainer {
 public:
  // `model` (from load_model; it must outlive the trainer) trains in place.
  // ValueError for a family without a trainer or a quantized Llama model.
  FixedBatchTrainer(CausalLM& model, const Gpt2TrainConfig& config);
  ~FixedBatchTrainer();

  // One optimizer step on ids [B, T] (u32 or i32 on the CPU, T >= 2).
  TrainStepResult step(const Tensor& ids);

  // The family's trainer, for checkpoints: exactly one is non-null.
  Gpt2Trainer* gpt2() { return gpt2_.get(); }
  LlamaTrainer* llama() { return llama_.get(); }

 private:
  std::unique_ptr<Gpt2Trainer> gpt2_;
  std::unique_ptr<LlamaTrainer> llama_;
};

}  // namespace forge
