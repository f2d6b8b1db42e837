// Attention dropout in Llama-family training (config.json's
// attention_dropout, or TrainConfig::attention_dropout): zero is the path
// without dropout bit for bit, nonzero changes the losses and is a pure
// function of the seed. (Its gradients: the finite-difference test of
// tests/golden/test_llama_train_golden.cpp.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "forge/gpt2_train.h"
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

// Three AdamW steps on one batch of a fresh model (the same weights for every
// call): the losses.
std::vector<float> losses(const ModelConfig& mc, const TrainConfig& tc) {
  auto model = random_model(mc, 7, Device::cpu());
  LlamaTrainer trainer(*model, tc);
  const Tensor ids = Tensor::from_vector(std::vector<uint32_t>{1, 5, 9, 2, 33, 7, 7, 0, 12, 3, 38, 20, 4, 4, 17, 8},
                                         {2, 8});
  const TrainBatch mb{ids, gpt2_shifted_targets(ids)};
  std::vector<float> out;
  for (int s = 0; s < 3; ++s) out.push_back(trainer.step({mb}).loss);
  return out;
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
