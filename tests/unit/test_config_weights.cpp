// Architecture detection and tensor layout checks against config.json.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "forge/error.h"
#include "forge/model_config.h"
#include "forge/safetensors.h"
#include "test_safetensors_util.h"
#include "unit/this_build.h"

using namespace forge;

namespace {

const std::string kData = forge::testing::test_data_dir();

struct Fixture {
  ModelConfig config;
  std::vector<TensorInfo> tensors;
};

Fixture load(const std::string& name) {
  return {load_config(kData + "/" + name), Checkpoint::open(kData + "/" + name).tensors()};
}

TensorInfo& find(std::vector<TensorInfo>& ts, const std::string& name) {
  for (auto& t : ts)
    if (t.name == name) return t;
  throw std::runtime_error("test: no tensor " + name);
}

void remove_tensor(std::vector<TensorInfo>& ts, const std::string& name) {
  std::erase_if(ts, [&](const TensorInfo& t) { return t.name == name; });
}

void expect_refused(const Fixture& f, const std::string& message) {
  try {
    check_weights(f.config, f.tensors, "DIR");
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

}  // namespace

TEST(ConfigWeights, Gpt2Fixture) {
  Fixture f = load("gpt2-tiny");
  WeightLayout l = check_weights(f.config, f.tensors, "gpt2-tiny");
  EXPECT_EQ(l.arch, Arch::Gpt2);
  EXPECT_EQ(l.prefix, "transformer.");
  EXPECT_TRUE(l.tied_embeddings);
  EXPECT_FALSE(l.quantized);
  EXPECT_TRUE(l.unused.empty());
  // V*C + P*C + L*(4C + 3C^2+3C + C^2+C + 4C^2+4C + 4C^2+C) + 2C with V 1000, P 64, C 32, L 2
  const int64_t C = 32, per_layer = 4 * C + 3 * C * C + 3 * C + C * C + C + 4 * C * C + 4 * C + 4 * C * C + C;
  EXPECT_EQ(l.parameters, 1000 * C + 64 * C + 2 * per_layer + 2 * C);
  EXPECT_EQ(l.name("h.0.attn.c_attn.weight"), "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(l.name("lm_head.weight"), "lm_head.weight");
  EXPECT_EQ(guess_arch(f.tensors), Arch::Gpt2);
  EXPECT_EQ(check_weights(load("gpt2-vocab50257").config, load("gpt2-vocab50257").tensors, "v").arch, Arch::Gpt2);
}

TEST(ConfigWeights, Gpt2WithoutTransformerPrefix) {
  Fixture f = load("gpt2-tiny");
  for (auto& t : f.tensors) t.name = t.name.substr(std::string("transformer.").size());
  f.tensors.push_back({"h.0.attn.bias", StDType::F32, {1, 1, 64, 64}, 0, 0});  // old causal-mask buffer
  WeightLayout l = check_weights(f.config, f.tensors, "DIR");
  EXPECT_EQ(l.prefix, "");
  EXPECT_EQ(l.name("h.1.ln_2.bias"), "h.1.ln_2.bias");
  EXPECT_EQ(l.unused, std::vector<std::string>{"h.0.attn.bias"});
  EXPECT_EQ(guess_arch(f.tensors), Arch::Gpt2);
}

TEST(ConfigWeights, LlamaFixtures) {
  Fixture f = load("llama-tiny");
  WeightLayout l = check_weights(f.config, f.tensors, "llama-tiny");
  EXPECT_EQ(l.arch, Arch::Llama);
  EXPECT_EQ(l.prefix, "model.");
  EXPECT_TRUE(l.tied_embeddings);
  EXPECT_FALSE(l.quantized);
  int64_t stored = 0;
  for (const auto& t : f.tensors) stored += numel(t.shape);
  EXPECT_EQ(l.parameters, stored);

  Fixture q = load("llama-tiny-mlx8");
  WeightLayout lq = check_weights(q.config, q.tensors, "llama-tiny-mlx8");
  EXPECT_TRUE(lq.quantized);
  EXPECT_TRUE(lq.unused.empty());
  EXPECT_EQ(lq.parameters, l.parameters) << "unpacked parameter count must match the bf16 model";
  EXPECT_EQ(guess_arch(q.tensors), Arch::Llama);
}

TEST(ConfigWeights, MisshapedTensorNamesBothShapes) {
  Fixture f = load("gpt2-tiny");
  find(f.tensors, "transformer.h.1.attn.c_attn.weight").shape = {96, 32};  // Linear order instead of Conv1D
  expect_refused(f, "[weights] tensor 'transformer.h.1.attn.c_attn.weight' has shape [96, 32], expected [32, 96] in DIR");

  Fixture l = load("llama-tiny");
  find(l.tensors, "model.layers.0.self_attn.k_proj.weight").shape = {128, 128};  // as if no GQA
  expect_refused(l, "[weights] tensor 'model.layers.0.self_attn.k_proj.weight' has shape [128, 128], expected [64, 128] in DIR");

  Fixture d = load("llama-tiny");
  find(d.tensors, "model.norm.weight").dtype = StDType::I32;
  expect_refused(d, "[weights] tensor 'model.norm.weight' has dtype I32, expected F32, F16 or BF16 in DIR");
}

TEST(ConfigWeights, MissingTensors) {
  Fixture f = load("gpt2-tiny");
  remove_tensor(f.tensors, "transformer.h.1.mlp.c_fc.bias");
  expect_refused(f, "[weights] missing tensor 'transformer.h.1.mlp.c_fc.bias' in DIR");

  Fixture g = load("gpt2-tiny");
  remove_tensor(g.tensors, "transformer.wte.weight");
  expect_refused(g, "[weights] missing tensor 'transformer.wte.weight' or 'wte.weight' for a gpt2 model in DIR");

  // Untied embeddings need lm_head.weight.
  Fixture l = load("llama-tiny");
  std::get<LlamaConfig>(l.config.params).tie_word_embeddings = false;
  expect_refused(l, "[weights] missing tensor 'lm_head.weight' [1000, 128] (config has tie_word_embeddings false) in DIR");
  l.tensors.push_back({"lm_head.weight", StDType::BF16, {1000, 128}, 0, 0});
  WeightLayout untied = check_weights(l.config, l.tensors, "DIR");
  EXPECT_FALSE(untied.tied_embeddings);
  l.tensors.back().shape = {1000, 64};
  expect_refused(l, "[weights] tensor 'lm_head.weight' has shape [1000, 64], expected [1000, 128] in DIR");
}

TEST(ConfigWeights, QuantizedShapesAndDtypes) {
  Fixture q = load("llama-tiny-mlx8");
  find(q.tensors, "model.layers.1.mlp.down_proj.weight").shape = {128, 32};  // packed width of in=128, not 256
  expect_refused(q, "[weights] tensor 'model.layers.1.mlp.down_proj.weight' has shape [128, 32], expected [128, 64] in DIR");

  Fixture s = load("llama-tiny-mlx8");
  find(s.tensors, "model.layers.0.mlp.up_proj.scales").shape = {256, 4};
  expect_refused(s, "[weights] tensor 'model.layers.0.mlp.up_proj.scales' has shape [256, 4], expected [256, 2] in DIR");

  Fixture d = load("llama-tiny-mlx8");
  find(d.tensors, "model.layers.0.self_attn.q_proj.weight").dtype = StDType::BF16;
  expect_refused(d, "[weights] quantized tensor 'model.layers.0.self_attn.q_proj.weight' has dtype BF16, expected U32 in DIR");

  // Scales without a quantization block in the config.
  Fixture n = load("llama-tiny-mlx8");
  n.config.quantization.reset();
  EXPECT_THROW(check_weights(n.config, n.tensors, "DIR"), IoError);

  // The same checkpoint read as 4-bit: every packed width is wrong.
  Fixture b = load("llama-tiny-mlx8");
  b.config.quantization->bits = 4;
  expect_refused(b, "[weights] tensor 'model.embed_tokens.weight' has shape [1000, 32], expected [1000, 16] in DIR");
}

TEST(ConfigWeights, GuessWithoutConfig) {
  EXPECT_FALSE(guess_arch(Checkpoint::open(kData + "/gpt2-tiny/reference.safetensors").tensors()).has_value());
  EXPECT_EQ(guess_arch(Checkpoint::open(kData + "/llama-tiny/model.safetensors").tensors()), Arch::Llama);
}
