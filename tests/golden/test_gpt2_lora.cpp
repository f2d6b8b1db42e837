// LoRA on GPT-2 (forge/lora.h): adapters over its Conv1D projections in
// PEFT's layout (fan_in_fan_out), the LoRA gradients against finite
// differences, training that moves the adapter alone, a merged model that
// computes what base + adapter computed, and an adapter over the 8-bit base.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "forge/gpt2_train.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/quantize.h"
#include "forge/safetensors.h"
#include "golden/finite_differences.h"
#include "models/gpt2/build.h"
#include "parity/parity.h"
#include "unit/cli_process.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::all_close;

namespace {

const std::string kDir = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";

Tensor probe_ids() { return Tensor::from_vector(std::vector<uint32_t>{3, 17, 400, 999, 5, 6, 7, 8, 42, 1}, {1, 10}); }

Gpt2& as_gpt2(CausalLM& m) { return dynamic_cast<Gpt2&>(m); }

Gpt2TrainConfig lora_config() {
  Gpt2TrainConfig c;
  c.schedule.lr = 1e-2;
  c.schedule.cosine = false;
  c.weight_decay = 0;
  return c;
}

// A fresh adapter on every target, trained a few steps so B is not zero.
void attach_trained(CausalLM& model, const Tensor& ids) {
  attach_new_adapter(model, {.rank = 2, .alpha = 4, .targets = {"c_attn", "c_proj", "c_fc"}}, 5);
  Gpt2Trainer t(as_gpt2(model), lora_config());
  for (int s = 0; s < 3; ++s) t.step({{ids, gpt2_shifted_targets(ids)}});
}

// Six steps on one batch: the adapter learns it (the loss falls by > 0.01).
void expect_loss_falls(Gpt2Trainer& trainer, const Tensor& ids) {
  const Gpt2MicroBatch mb{ids, gpt2_shifted_targets(ids)};
  const float first = trainer.step({mb}).loss;
  float last = first;
  for (int s = 0; s < 5; ++s) last = trainer.step({mb}).loss;
  EXPECT_LT(last, first - 1e-2);
}

}  // namespace

// The adapter's gradients (every A and B, three modules of each block)
// against central differences of the loss.
TEST(Gpt2Lora, GradientsMatchFiniteDifferencesCpu) {
  auto model = load_model(kDir, Device::cpu());
  const Tensor ids = probe_ids();
  attach_trained(*model, ids);
  const std::vector<int32_t> targets = gpt2_shifted_targets(ids);
  int64_t n = 0;
  for (int32_t t : targets) n += t >= 0;
  Gpt2& m = as_gpt2(*model);
  Gpt2Grads grads;
  grads.lora_only = true;
  gpt2_backward(m, gpt2_forward_train(m, ids, Gpt2Dropout{}, 0), targets, float(1.0 / double(n)), grads);
  auto loss = [&] {
    Gpt2Grads scratch;
    scratch.lora_only = true;
    const Tensor nll = gpt2_backward(m, gpt2_forward_train(m, ids, Gpt2Dropout{}, 0), targets, 0.0f, scratch);
    return double(nll.to_vector<float>()[0]) / double(n);
  };
  const auto params = gpt2::lora_named(m.mutable_weights()), g = gpt2::lora_named(grads.g);
  EXPECT_EQ(params.size(), 2u * 4 * 2);  // A and B of 4 modules in 2 blocks
  EXPECT_EQ(params[0].first, "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight");
  std::mt19937 rng(3);
  forge::testing::expect_gradients_match_differences(params, g, loss, rng, 3, " (gpt2 lora)");
}

// Training a fresh adapter lowers the loss and changes nothing of the base;
// saved, it is PEFT's layout for GPT-2 and loads back to the same logits;
// merged, the model computes what base + adapter computed, and the merged
// weights keep the Conv1D layout.
TEST(Gpt2Lora, TrainSaveLoadMergeCpu) {
  const Tensor ids = probe_ids();
  auto model = load_model(kDir, Device::cpu());
  const std::vector<float> before = model->forward(ids).to_f32();
  const std::vector<HostTensor> base_before = model_weights(*model);
  attach_new_adapter(*model, {.rank = 4, .alpha = 8, .targets = {"c_attn", "c_fc"}}, 11);
  EXPECT_EQ(model->forward(ids).to_f32(), before) << "B = 0: a fresh adapter changes nothing";
  Gpt2Trainer trainer(as_gpt2(*model), lora_config());
  expect_loss_falls(trainer, ids);
  EXPECT_EQ(trainer.host_weights().size(), 2u * 2 * 2);
  const std::vector<float> with = model->forward(ids).to_f32();
  EXPECT_FALSE(all_close(with, before, 1e-4, 0)) << "the adapter trained";

  forge::testing::ScratchDir dir("gpt2_lora");
  save_adapter(*model, dir.path / "a", "gpt2-tiny");
  const LoraConfig c = read_adapter_config(dir.path / "a");
  EXPECT_TRUE(c.fan_in_fan_out);
  const SafetensorsFile st = SafetensorsFile::open(dir.path / "a" / "adapter_model.safetensors");
  EXPECT_EQ(st.get("base_model.model.transformer.h.1.attn.c_attn.lora_A.weight").shape(), (Shape{4, 32}));  // [r, in]
  EXPECT_EQ(st.get("base_model.model.transformer.h.1.attn.c_attn.lora_B.weight").shape(), (Shape{96, 4}));  // [out, r]
  EXPECT_EQ(st.get("base_model.model.transformer.h.0.mlp.c_fc.lora_B.weight").shape(), (Shape{128, 4}));
  auto again = load_model(kDir, Device::cpu());
  load_adapter(*again, dir.path / "a");
  EXPECT_TRUE(all_close(again->forward(ids).to_f32(), with, 1e-6, 1e-6));

  merge_adapter(*again);
  EXPECT_FALSE(attached_adapter(*again));
  EXPECT_TRUE(all_close(again->forward(ids).to_f32(), with, 1e-4, 1e-4)) << "merged = base + adapter";
  const std::vector<HostTensor> merged = model_weights(*again);
  ASSERT_EQ(merged.size(), base_before.size());
  for (size_t i = 0; i < merged.size(); ++i) {
    EXPECT_EQ(merged[i].shape, base_before[i].shape) << merged[i].name;  // c_attn [C, 3C] as HF stores it
    const bool adapted = merged[i].name.find("c_attn.weight") != std::string::npos ||
                         merged[i].name.find("c_fc.weight") != std::string::npos;
    EXPECT_EQ(merged[i].values != base_before[i].values, adapted) << merged[i].name;
  }
  // The trained model's own base is untouched.
  const std::vector<HostTensor> base_after = model_weights(*model);
  for (size_t i = 0; i < base_after.size(); ++i) EXPECT_EQ(base_after[i].values, base_before[i].values) << base_after[i].name;
}

// An adapter trained over the 8-bit base (whose Linears are quantized rows)
// applies the same delta there: the same adapter on the dense base gives
// logits as close to it as the quantized bases are to each other.
TEST(Gpt2Lora, AdapterOverQuantizedBaseCpu) {
  forge::testing::ScratchDir dir("gpt2_lora_q8");
  quantize_model(kDir, dir.path / "q8", QuantSpec{32, 8});
  const Tensor ids = probe_ids();
  auto q = load_model(dir.path / "q8", Device::cpu());
  attach_new_adapter(*q, {.rank = 2, .alpha = 4, .targets = {"c_attn", "c_proj"}}, 2);
  Gpt2Trainer trainer(as_gpt2(*q), lora_config());
  expect_loss_falls(trainer, ids);
  save_adapter(*q, dir.path / "a");
  auto dense = load_model(kDir, Device::cpu());
  const std::vector<float> dense_plain = dense->forward(ids).to_f32();
  load_adapter(*dense, dir.path / "a");
  const std::vector<float> q_with = q->forward(ids).to_f32(), dense_with = dense->forward(ids).to_f32();
  double gap = 0, moved = 0;
  for (size_t i = 0; i < q_with.size(); ++i) {
    gap = std::max(gap, double(std::fabs(q_with[i] - dense_with[i])));
    moved = std::max(moved, double(std::fabs(dense_with[i] - dense_plain[i])));
  }
  EXPECT_LT(gap, 0.25 * moved) << "the adapter moves the logits more than 8 bits of rounding does";
}
