#include "forge/train_fixed.h"

#include "forge/error.h"
#include "forge/gpt2.h"

namespace forge {

Gpt2TrainConfig fixed_batch_config(double lr, double weight_decay, int64_t steps) {
  Gpt2TrainConfig c;
  c.schedule.lr = lr;
  c.schedule.warmup = 0;
  c.schedule.total = steps;
  c.schedule.cosine = false;
  c.weight_decay = weight_decay;
  c.grad_clip = 0.0f;
  c.dropout = Gpt2Dropout{};
  return c;
}

FixedBatchTrainer::FixedBatchTrainer(CausalLM& model, const Gpt2TrainConfig& g) {
  if (auto* gpt2 = dynamic_cast<Gpt2*>(&model)) {
    gpt2_ = std::make_unique<Gpt2Trainer>(*gpt2, g);
    return;
  }
  TrainConfig c;
  c.optimizer = {g.schedule, g.beta1, g.beta2, g.eps, g.weight_decay, g.decays, g.grad_clip};
  c.head_rows = g.head_rows;
  c.attention_dropout = 0.0;  // parity mode: no dropout, whatever config.json says
  llama_ = std::make_unique<LlamaTrainer>(model, c);  // ValueError for another family
}

FixedBatchTrainer::~FixedBatchTrainer() = default;

TrainStepResult FixedBatchTrainer::step(const Tensor& ids) {
  if (ids.shape().size() != 2 || ids.shape()[1] < 2)
    throw ShapeError("[train] ids must be [B, T] with T >= 2, got " + shape_str(ids.shape()));
  if (gpt2_) {
    const Gpt2StepResult r = gpt2_->step({Gpt2MicroBatch{ids, gpt2_shifted_targets(ids)}});
    return {r.loss, r.grad_norm, r.lr};
  }
  return llama_->step({TrainBatch{ids, gpt2_shifted_targets(ids)}});
}

}  // namespace forge
