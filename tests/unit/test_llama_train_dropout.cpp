// Attention dropout in Llama-family training (config.json's
// attention_dropout, or TrainConfig::attention_dropout): zero is the path
// without dropout bit for bit, nonzero changes the losses and is a pure
// function of the seed, also across a resumed run. (Its gradients: the finite-difference test of
// tests/golden/test_llama_train_golden.cpp.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "forge/gpt2_train.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/train.h"

using namespace forge;

namespace {

ModelConfig tiny_config(const std::string& attention_dropout) {
  return parse_config(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 40,
    "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 32, "rms_norm_eps": 1e-5,
    "attention_dropout": )" + attention_dropout + "}",
                      "test/config.json");
}

TrainBatch batch() {
  const Tensor ids = Tensor::from_vector(std::vector<uint32_t>{1, 5, 9, 2, 33, 7, 7, 0, 12, 3, 38, 20, 4, 4, 17, 8},
                                         {2, 8});
  return {ids, gpt2_shifted_targets(ids)};
}

// `steps` AdamW steps on one batch: the losses.
std::vector<float> run(LlamaTrainer& trainer, int steps) {
  std::vector<float> out;
  for (int s = 0; s < steps; ++s) out.push_back(trainer.step({batch()}).loss);
  return out;
}

// Three steps of a fresh model (the same weights for every call).
std::vector<float> losses(const ModelConfig& mc, const TrainConfig& tc) {
  auto model = random_model(mc, 7, Device::cpu());
  LlamaTrainer trainer(*model, tc);
  return run(trainer, 3);
}

TrainConfig train_config(uint64_t seed, std::optional<double> p = std::nullopt) {
  TrainConfig c;
  c.optimizer.schedule.lr = 1e-2;
  c.optimizer.schedule.cosine = false;
  c.seed = seed;
  c.attention_dropout = p;
  return c;
}

}  // namespace

TEST(LlamaTrainDropout, ReadFromConfigJson) {
  EXPECT_DOUBLE_EQ(tiny_config("0.25").llama().attention_dropout, 0.25);
  EXPECT_THROW(tiny_config("1.5"), Error);
  auto model = random_model(tiny_config("0.0"), 7, Device::cpu());
  EXPECT_THROW(LlamaTrainer(*model, train_config(1, 1.0)), ValueError);
}

TEST(LlamaTrainDropout, ZeroIsThePathWithoutDropoutBitForBit) {
  const std::vector<float> plain = losses(tiny_config("0.0"), train_config(1));
  EXPECT_EQ(losses(tiny_config("0.0"), train_config(2, 0.0)), plain);  // the seed plays no part
  EXPECT_EQ(losses(tiny_config("0.3"), train_config(1, 0.0)), plain);  // the override wins over config.json
}

TEST(LlamaTrainDropout, NonzeroChangesTheLossesAndFollowsTheSeed) {
  const std::vector<float> plain = losses(tiny_config("0.0"), train_config(1));
  const std::vector<float> a = losses(tiny_config("0.3"), train_config(1));  // config.json's dropout
  EXPECT_NE(a[0], plain[0]);
  EXPECT_EQ(losses(tiny_config("0.0"), train_config(1, 0.3)), a);  // the same masks through the override
  const std::vector<float> b = losses(tiny_config("0.3"), train_config(2));
  EXPECT_NE(b[0], a[0]);
  for (size_t s = 0; s < a.size(); ++s) EXPECT_NEAR(a[s], plain[s], 0.5) << "step " << s;  // still the same model
}

// A LoRA run with dropout stopped after two steps and resumed from its
// adapter and optimizer state draws the masks the whole run draws.
TEST(LlamaTrainDropout, ResumedRunDropsWhatTheWholeRunDrops) {
  const ModelConfig mc = tiny_config("0.3");
  LoraConfig lc;
  lc.rank = 2;
  auto fresh = [&] {
    auto m = random_model(mc, 7, Device::cpu());
    attach_new_adapter(*m, lc, 3);
    return m;
  };
  auto whole_model = fresh();
  LlamaTrainer whole(*whole_model, train_config(5));
  const std::vector<float> want = run(whole, 4);

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("forge_llama_dropout_" + std::to_string(::getpid()));
  auto first_model = fresh();
  LlamaTrainer first(*first_model, train_config(5));
  run(first, 2);
  save_adapter(*first_model, dir);
  first.write_state(dir);

  auto resumed_model = random_model(mc, 7, Device::cpu());
  load_adapter(*resumed_model, dir);
  LlamaTrainer resumed(*resumed_model, train_config(5));
  resumed.read_state(dir);
  const std::vector<float> rest = run(resumed, 2);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rest, std::vector<float>(want.begin() + 2, want.end()));
}
