// Models loaded with bf16 weights on the device (load_model(dir, device,
// DType::BF16)): GPT-2 (an f32 checkpoint, rounded to nearest even at load)
// and the Llama family (bf16 checkpoints, whose values stay as they are), on
// the CPU and on WebGPU. Logits within 1e-2 of the same model loaded in f32
// (the bound; a bf16 checkpoint differs from its f32 load only in the
// order of the f32 sums, an f32 one by bf16 rounding too), greedy tokens
// identical with and without the KV cache (llama-tiny, gpt2-tiny), and the device bytes of the f32
// load less two bytes for each projection weight (embeddings, norms and
// biases stay f32). An MLX-quantized checkpoint loads as it does in f32.
#include <gtest/gtest.h>

#include "forge/generate.h"
#include "forge/gpt2_train.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/train.h"
#include "forge/ops.h"
#include "golden/reference_fixture.h"
#include "parity/parity.h"

using namespace forge;
using forge::testing::all_close;
using forge::testing::Fixture;
using forge::testing::test_devices;

namespace {

struct Case {
  const char* name;
  int64_t projection_params;  // elements of the blocks' projection weights
  const char* weights;        // ModelInfo::weights of the bf16 load
};

// llama-tiny / qwen2-tiny: 2 layers of q, o [128, 128], k, v [64, 128],
// gate, up [256, 128], down [128, 256]: 2 * 147456. gpt2-tiny: 2 layers of
// c_attn [32, 96], c_proj [32, 32], c_fc [32, 128], mlp c_proj [128, 32]:
// 2 * 12288.
const Case kCases[] = {{"llama-tiny", 294912, "bf16"}, {"qwen2-tiny", 294912, "bf16"},
                       {"gpt2-tiny", 24576, "f32 -> bf16"}};

}  // namespace

TEST(Bf16Models, LogitsNearF32AndHalfTheProjectionBytes) {
  for (const Case& c : kCases) {
    Fixture fx(c.name);
    for (const Device& dev : test_devices()) {
      auto f32 = load_model(fx.dir, dev);
      auto bf16 = load_model(fx.dir, dev, DType::BF16);
      const Tensor ids = fx.input_ids();
      EXPECT_TRUE(all_close(bf16->forward(ids), f32->forward(ids), 1e-2, 0)) << c.name << " on " << dev.name();
      EXPECT_EQ(bf16->info().weights, c.weights) << c.name;
      EXPECT_EQ(bf16->info().parameters, f32->info().parameters) << c.name;
      EXPECT_EQ(bf16->info().device_bytes, f32->info().device_bytes - 2 * uint64_t(c.projection_params)) << c.name;
    }
  }
}

TEST(Bf16Models, GreedyWithAndWithoutCacheAgree) {
  for (const Case& c : {kCases[0], kCases[2]}) {
    Fixture fx(c.name);
    for (const Device& dev : test_devices()) {
      auto model = load_model(fx.dir, dev, DType::BF16);
      GenerateOptions o;
      o.max_new_tokens = 12;
      o.use_cache = true;
      const std::vector<uint32_t> cached = generate(*model, fx.ids("generate_prompt"), o);
      o.use_cache = false;
      EXPECT_EQ(generate(*model, fx.ids("generate_prompt"), o), cached) << c.name << " on " << dev.name();
      EXPECT_EQ(cached.size(), 12u) << c.name;
    }
  }
}

TEST(Bf16Models, QuantizedCheckpointIsUnchanged) {
  Fixture fx("llama-tiny-mlx4");
  auto f32 = load_model(fx.dir, Device::cpu());
  auto bf16 = load_model(fx.dir, Device::cpu(), DType::BF16);
  EXPECT_EQ(bf16->info().device_bytes, f32->info().device_bytes);
  EXPECT_EQ(bf16->info().weights, f32->info().weights);
  const Tensor ids = fx.input_ids();
  EXPECT_TRUE(all_close(bf16->forward(ids), f32->forward(ids), 0, 0));
}

TEST(Bf16Models, OtherDtypesAreRefused) {
  Fixture fx("llama-tiny");
  forge::testing::expect_error<ValueError>("model", [&] { load_model(fx.dir, Device::cpu(), DType::F16); },
                                           "f32 or bf16");
}

// What `forge bench llm --dtype bf16` builds: random weights stored as bf16
// and held as bf16, against the same weights held as f32 (widened exactly).
TEST(Bf16Models, RandomModelForBenchmarks) {
  Fixture fx("llama-tiny");
  const ModelConfig mc = load_config(fx.dir);
  auto f32 = random_model(mc, 7, Device::cpu(), DType::BF16, DType::F32);
  auto bf16 = random_model(mc, 7, Device::cpu(), DType::BF16, DType::BF16);
  EXPECT_EQ(bf16->info().weights, "bf16");
  EXPECT_EQ(bf16->info().device_bytes, f32->info().device_bytes - 2 * uint64_t(kCases[0].projection_params));
  const Tensor ids = fx.input_ids();
  EXPECT_TRUE(all_close(bf16->forward(ids), f32->forward(ids), 1e-4, 1e-4));
}

// LoRA over a bf16 frozen base (the PEFT fixture adapter on llama3-tiny, a
// bf16 checkpoint): the reference logits with the adapter as closely as the
// f32 load gives them on the CPU (only the order of the f32 sums differs),
// and two adapter steps the reference's losses (2e-3, as LoraGolden); full
// fine-tuning of a bf16 load is refused (training keeps f32 weights).
TEST(Bf16Models, LoraOverBf16Base) {
  Fixture base("llama3-tiny"), ref("llama3-tiny/adapter");
  auto model = load_model(base.dir, Device::cpu(), DType::BF16);
  EXPECT_THROW({ LlamaTrainer t(*model, TrainConfig{}); }, ValueError);
  load_adapter(*model, ref.dir);
  const Tensor ids = ref.input_ids();
  EXPECT_TRUE(all_close(model->forward(ids).to_f32(), ref.f32("logits_with_adapter"), 1e-4, 1e-4));
  TrainConfig c;
  c.optimizer.schedule.lr = 1e-3;
  c.optimizer.schedule.cosine = false;
  c.optimizer.weight_decay = 0.0;
  LlamaTrainer trainer(*model, c);
  const TrainBatch mb{ids, gpt2_shifted_targets(ids)};
  const std::vector<float> want = ref.f32("lora_train_losses");
  for (size_t s = 0; s < 2; ++s) EXPECT_NEAR(trainer.step({mb}).loss, want[s], 2e-3) << "step " << s;
}
