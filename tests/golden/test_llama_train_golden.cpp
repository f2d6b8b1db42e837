// Full fine-tuning of the Llama family against Hugging Face (tests/fixtures/
// {llama3-tiny, qwen2-tiny, mistral-tiny}: llama3 rope scaling and a tied
// head; q/k/v bias; a sliding window of 8 and an untied head): ten AdamW steps
// on one batch (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on every
// parameter, labels = input_ids shifted, mean over B * (T - 1)), losses within
// 2e-3 of `train_losses` on the CPU and 5e-3 on WebGPU (the bf16 checkpoints
// train in f32 here and in the reference; the bounds leave room for the
// different summation orders compounding over ten updates).
//
// Then the whole backward against central finite differences of the loss on a
// tiny random model with every bias, GQA and a sliding window (without and
// with attention dropout); gradient
// accumulation against one batch; a quantized model refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "forge/gpt2_train.h"
#include "forge/model.h"
#include "forge/train.h"
#include "golden/finite_differences.h"
#include "golden/reference_fixture.h"
#include "models/llama/train.h"
#include "parity/parity.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::Fixture;
using forge::testing::gpu_device;

namespace {

TrainConfig fixture_config() {
  TrainConfig c;
  c.optimizer.schedule.lr = 1e-3;
  c.optimizer.schedule.cosine = false;
  c.optimizer.weight_decay = 0.01;
  return c;
}

void check_ten_losses(const std::string& name, const Device& dev, double tol) {
  Fixture f(name);
  auto model = load_model(f.dir, dev);
  LlamaTrainer trainer(*model, fixture_config());
  const Tensor ids = f.input_ids();
  const TrainBatch mb{ids, gpt2_shifted_targets(ids)};
  const std::vector<float> want = f.f32("train_losses");
  ASSERT_EQ(want.size(), 10u);
  for (size_t s = 0; s < want.size(); ++s)
    EXPECT_NEAR(trainer.step({mb}).loss, want[s], tol) << name << " step " << s << " on " << dev.name();
}

}  // namespace

TEST(LlamaTrainGolden, TenLossesLlama3Cpu) { check_ten_losses("llama3-tiny", Device::cpu(), 2e-3); }
TEST(LlamaTrainGolden, TenLossesQwen2Cpu) { check_ten_losses("qwen2-tiny", Device::cpu(), 2e-3); }
TEST(LlamaTrainGolden, TenLossesMistralCpu) { check_ten_losses("mistral-tiny", Device::cpu(), 2e-3); }
TEST(LlamaTrainGolden, TenLossesLlama3WebGpu) { check_ten_losses("llama3-tiny", gpu_device(), 5e-3); }
TEST(LlamaTrainGolden, TenLossesQwen2WebGpu) { check_ten_losses("qwen2-tiny", gpu_device(), 5e-3); }
TEST(LlamaTrainGolden, TenLossesMistralWebGpu) { check_ten_losses("mistral-tiny", gpu_device(), 5e-3); }

TEST(LlamaTrainGolden, QuantizedModelIsAnError) {
  auto model = load_model(std::string(forge::testing::test_data_dir()) + "/llama-tiny-mlx4", Device::cpu());
  EXPECT_THROW(LlamaTrainer(*model, fixture_config()), ValueError);
}

namespace {

// Every parameter's gradient against central differences of the mean loss,
// on a few elements of each, with attention dropout p (the masks a pure
// function of the key, so the loss is a deterministic function of the
// weights). The weights are drawn larger than an initialisation's (so every
// path carries gradient) and the biases and norms away from 0 and 1. f32
// losses of ~3 carry ~1e-6 of rounding, so with a step of 1e-2 the quotient
// is good to ~1e-4 plus the curvature term.
void check_backward_against_finite_differences(float p_drop) {
  const uint64_t key = 0x5eed;
  const ModelConfig mc = parse_config(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 40, "hidden_size": 16,
    "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "attention_bias": true, "mlp_bias": true, "sliding_window": 3,
    "layer_types": ["sliding_attention", "full_attention"]})",
                                        "test/config.json");
  auto base = random_model(mc, 7, Device::cpu());
  const auto& model = dynamic_cast<const models::LlamaModel&>(*base);
  ASSERT_EQ(model.config().window(0), 3);
  models::LlamaParams p = models::llama_params(model);
  auto named = models::llama_named(p, model.config(), model.tied());
  std::mt19937 rng(3);
  for (auto& [name, t] : named) {
    const bool vec = t->rank() == 1;
    const bool norm = name.find("norm") != std::string::npos;
    std::uniform_real_distribution<float> d(vec ? -0.2f : -0.5f, vec ? 0.2f : 0.5f);
    float* v = t->data<float>();
    for (int64_t i = 0; i < t->numel(); ++i) v[i] = (norm ? 1.0f : 0.0f) + d(rng);
  }
  const Tensor ids = Tensor::from_vector(std::vector<uint32_t>{1, 5, 9, 2, 33, 7, 7, 0, 12, 3, 38, 20, 4, 4, 17, 8},
                                         {2, 8});
  const std::vector<int32_t> targets = gpt2_shifted_targets(ids);
  int64_t n = 0;
  for (int32_t t : targets) n += t >= 0;
  auto loss = [&] {
    models::LlamaActs a = models::llama_forward_train(model, ids, p_drop, key);
    return double(models::llama_backward(model, a, targets, 0, nullptr).to_vector<float>()[0]) / double(n);
  };
  models::LlamaParams g;
  {
    models::LlamaActs a = models::llama_forward_train(model, ids, p_drop, key);
    models::llama_backward(model, a, targets, float(1.0 / double(n)), &g);
  }
  auto grads = models::llama_named(g, model.config(), model.tied());
  forge::testing::expect_gradients_match_differences(named, grads, loss, rng, 4,
                                                     " with dropout " + std::to_string(p_drop));
}

}  // namespace

TEST(LlamaTrainGolden, BackwardMatchesFiniteDifferencesCpu) { check_backward_against_finite_differences(0.0f); }
// The backward regenerates each layer's attention-dropout mask from the
// forward's key.
TEST(LlamaTrainGolden, BackwardWithAttentionDropoutMatchesFiniteDifferencesCpu) {
  check_backward_against_finite_differences(0.3f);
}

// Gradient accumulation: the two rows of the batch as two micro-batches give
// the step of the whole batch (same mean loss, gradient norm and update), up
// to f32 summation order.
TEST(LlamaTrainGolden, AccumulationMatchesOneBatchCpu) {
  Fixture f("qwen2-tiny");
  const Tensor ids = f.input_ids();  // [2, T]
  ASSERT_EQ(ids.dim(0), 2);
  const int64_t T = ids.dim(1);
  const uint32_t* p = ids.data<uint32_t>();
  auto row = [&](int64_t b) {
    Tensor r = Tensor::from_vector(std::vector<uint32_t>(p + b * T, p + (b + 1) * T), {1, T});
    return TrainBatch{r, gpt2_shifted_targets(r)};
  };
  auto whole_model = load_model(f.dir, Device::cpu()), split_model = load_model(f.dir, Device::cpu());
  LlamaTrainer whole(*whole_model, fixture_config()), split(*split_model, fixture_config());
  for (int s = 0; s < 3; ++s) {
    const TrainStepResult a = whole.step({TrainBatch{ids, gpt2_shifted_targets(ids)}});
    const TrainStepResult b = split.step({row(0), row(1)});
    EXPECT_NEAR(a.loss, b.loss, 1e-5) << "step " << s;
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-4 * a.grad_norm) << "step " << s;
  }
}
