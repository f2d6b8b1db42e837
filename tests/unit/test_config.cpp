// config.json parsing: the four fixtures, then broken variants of them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "forge/error.h"
#include "forge/model_config.h"
#include "test_safetensors_util.h"
#include "unit/this_build.h"

using namespace forge;
using json = nlohmann::json;

namespace {

const std::string kData = forge::testing::test_data_dir();

json fixture(const std::string& name) { return json::parse(forge::testing::read_file(kData + "/" + name + "/config.json")); }

ModelConfig parse(const json& j) { return parse_config(j.dump(), "m/config.json"); }

// Parsing `j` throws E whose message names `key` and the file.
template <typename E>
void expect_error(const json& j, const std::string& key) {
  try {
    parse(j);
    ADD_FAILURE() << "accepted config with bad " << key;
  } catch (const E& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[config] ", 0), 0u) << msg;
    EXPECT_NE(msg.find(key), std::string::npos) << "expected '" << key << "' in: " << msg;
    EXPECT_NE(msg.find("m/config.json"), std::string::npos) << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for " << key << ": " << e.what();
  }
}

}  // namespace

TEST(ConfigFixtures, Gpt2Tiny) {
  ModelConfig m = load_config(kData + "/gpt2-tiny");
  ASSERT_EQ(m.arch, Arch::Gpt2);
  const Gpt2Config& c = m.gpt2();
  EXPECT_EQ(c.vocab_size, 1000);
  EXPECT_EQ(c.n_embd, 32);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 2);
  EXPECT_EQ(c.head_dim(), 16);
  EXPECT_EQ(c.n_positions, 64);
  EXPECT_EQ(c.n_inner, 128);  // null -> 4 * n_embd
  EXPECT_DOUBLE_EQ(c.layer_norm_epsilon, 1e-5);
  EXPECT_EQ(c.activation_function, "gelu_new");
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(m.bos_token_id, 50256);
  EXPECT_EQ(m.eos_token_ids, std::vector<int64_t>{50256});
  EXPECT_FALSE(m.quantization.has_value());
  EXPECT_EQ(m.source, kData + "/gpt2-tiny/config.json");
  EXPECT_THROW(m.llama(), ValueError);
}

TEST(ConfigFixtures, Gpt2FullVocab) {
  ModelConfig m = load_config(kData + "/gpt2-vocab50257/config.json");
  EXPECT_EQ(m.gpt2().vocab_size, 50257);
  EXPECT_EQ(m.gpt2().n_layer, 1);
}

TEST(ConfigFixtures, LlamaTiny) {
  ModelConfig m = load_config(kData + "/llama-tiny");
  ASSERT_EQ(m.arch, Arch::Llama);
  const LlamaConfig& c = m.llama();
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.intermediate_size, 256);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.max_position_embeddings, 256);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 100000.0);
  EXPECT_FALSE(c.rope_scaling.has_value());  // rope_parameters says "default"
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(m.bos_token_id, 0);
  EXPECT_EQ(m.eos_token_ids, std::vector<int64_t>{0});
  EXPECT_THROW(m.gpt2(), ValueError);
}

TEST(ConfigFixtures, LlamaMlx8Quantization) {
  ModelConfig m = load_config(kData + "/llama-tiny-mlx8");
  ASSERT_TRUE(m.quantization.has_value());
  EXPECT_EQ(m.quantization->group_size, 64);
  EXPECT_EQ(m.quantization->bits, 8);
  EXPECT_EQ(m.llama().hidden_size, 128);
}

TEST(ConfigVariants, DefaultsAndAlternativeKeys) {
  json g = fixture("gpt2-tiny");
  g.erase("n_positions");
  g["n_ctx"] = 128;
  g.erase("tie_word_embeddings");
  g["n_inner"] = 100;
  ModelConfig m = parse(g);
  EXPECT_EQ(m.gpt2().n_positions, 128);
  EXPECT_EQ(m.gpt2().n_inner, 100);
  EXPECT_TRUE(m.gpt2().tie_word_embeddings);

  json l = fixture("llama-tiny");
  l.erase("num_key_value_heads");
  l.erase("head_dim");
  l.erase("rope_theta");
  l.erase("rope_parameters");
  l.erase("tie_word_embeddings");
  l["eos_token_id"] = json::array({2, 7});
  ModelConfig ml = parse(l);
  EXPECT_EQ(ml.llama().num_key_value_heads, 4);
  EXPECT_EQ(ml.llama().head_dim, 32);
  EXPECT_DOUBLE_EQ(ml.llama().rope_theta, 10000.0);
  EXPECT_FALSE(ml.llama().tie_word_embeddings);
  EXPECT_EQ(ml.eos_token_ids, (std::vector<int64_t>{2, 7}));

  // rope_theta only inside rope_parameters.
  json r = fixture("llama-tiny");
  r.erase("rope_theta");
  r["rope_parameters"]["rope_theta"] = 500000.0;
  EXPECT_DOUBLE_EQ(parse(r).llama().rope_theta, 500000.0);

  // quantization_config alone, as some converters write it.
  json q = fixture("llama-tiny-mlx8");
  q["quantization_config"] = q["quantization"];
  q.erase("quantization");
  q["quantization_config"]["bits"] = 4;
  EXPECT_EQ(parse(q).quantization->bits, 4);
}

TEST(ConfigVariants, RopeScalingIsKept) {
  json l = fixture("llama-tiny");
  l["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  auto s = parse(l).llama().rope_scaling;
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->type, "llama3");
  EXPECT_DOUBLE_EQ(s->factor, 32.0);
  EXPECT_EQ(s->original_max_position_embeddings, 8192);

  l["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(parse(l).llama().rope_scaling->type, "linear");

  // Scaling given through rope_parameters (newer transformers).
  json p = fixture("llama-tiny");
  p["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 100000.0}};
  EXPECT_DOUBLE_EQ(parse(p).llama().rope_scaling->factor, 4.0);
}

TEST(ConfigBroken, MissingRequiredKeys) {
  for (const char* key : {"n_embd", "n_layer", "n_head", "vocab_size", "model_type"}) {
    json g = fixture("gpt2-tiny");
    g.erase(key);
    expect_error<IoError>(g, std::string("'") + key + "'");
  }
  json g = fixture("gpt2-tiny");
  g.erase("n_positions");
  expect_error<IoError>(g, "'n_positions' (or 'n_ctx')");
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"}) {
    json l = fixture("llama-tiny");
    l.erase(key);
    expect_error<IoError>(l, std::string("'") + key + "'");
  }
  json q = fixture("llama-tiny-mlx8");
  q["quantization"].erase("bits");
  expect_error<IoError>(q, "'quantization.bits'");
}

TEST(ConfigBroken, WrongJsonTypes) {
  json g = fixture("gpt2-tiny");
  g["n_embd"] = "32";
  expect_error<IoError>(g, "'n_embd' is \"32\", expected an integer");
  g = fixture("gpt2-tiny");
  g["n_layer"] = 2.5;
  expect_error<IoError>(g, "'n_layer' is 2.5, expected an integer");
  g = fixture("gpt2-tiny");
  g["layer_norm_epsilon"] = "small";
  expect_error<IoError>(g, "'layer_norm_epsilon'");
  json l = fixture("llama-tiny");
  l["tie_word_embeddings"] = 1;
  expect_error<IoError>(l, "'tie_word_embeddings' is 1, expected true or false");
  l = fixture("llama-tiny");
  l["rope_parameters"] = 3;
  expect_error<IoError>(l, "'rope_parameters' is 3, expected an object");
  l = fixture("llama-tiny");
  l["eos_token_id"] = json::array({1, "two"});
  expect_error<IoError>(l, "'eos_token_id'");
  EXPECT_THROW(parse_config("[1]", "m/config.json"), IoError);
  EXPECT_THROW(parse_config("{\"model_type\": ", "m/config.json"), IoError);
}

TEST(ConfigBroken, InconsistentValues) {
  json g = fixture("gpt2-tiny");
  g["n_head"] = 3;
  expect_error<ValueError>(g, "'n_head' = 3 does not divide 'n_embd' = 32");
  g = fixture("gpt2-tiny");
  g["n_embd"] = 0;
  expect_error<ValueError>(g, "'n_embd' = 0 must be positive");
  json l = fixture("llama-tiny");
  l["num_key_value_heads"] = 3;
  expect_error<ValueError>(l, "'num_key_value_heads' = 3 does not divide 'num_attention_heads' = 4");
  l = fixture("llama-tiny");
  l.erase("head_dim");
  l["num_attention_heads"] = 3;
  l["num_key_value_heads"] = 3;
  expect_error<ValueError>(l, "'num_attention_heads' = 3 does not divide 'hidden_size' = 128");
  l = fixture("llama-tiny");
  l["hidden_size"] = -128;
  expect_error<ValueError>(l, "'hidden_size' = -128 must be positive");
  l = fixture("llama-tiny");
  l["rope_theta"] = 10000.0;
  expect_error<ValueError>(l, "'rope_theta'");
  l = fixture("llama-tiny");
  l["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error<ValueError>(l, "unsupported RoPE scaling type 'yarn'");
  l = fixture("llama-tiny");
  l["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_error<IoError>(l, "'rope_scaling.low_freq_factor'");
  json q = fixture("llama-tiny-mlx8");
  q["quantization"]["bits"] = 7;
  expect_error<ValueError>(q, "'quantization.bits' = 7 is not one of");
  q = fixture("llama-tiny-mlx8");
  q["quantization_config"] = {{"group_size", 32}, {"bits", 8}};
  expect_error<ValueError>(q, "'quantization' and 'quantization_config' disagree");
  q = fixture("llama-tiny");
  q["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}};
  expect_error<ValueError>(q, "'quantization_config.quant_method' 'gptq'");
  json t = fixture("gpt2-tiny");
  t["model_type"] = "bert";
  expect_error<ValueError>(t, "unsupported 'model_type' 'bert'");
}

TEST(ConfigBroken, DuplicateKeysAndMissingFile) {
  std::string text = forge::testing::read_file(kData + "/gpt2-tiny/config.json");
  text.insert(text.find('{') + 1, "\"n_embd\": 64,");
  try {
    parse_config(text, "m/config.json");
    FAIL() << "duplicate key accepted";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "[config] duplicate key 'n_embd' in m/config.json");
  }
  forge::testing::TempDir dir;
  EXPECT_THROW(load_config(dir.path()), IoError);
}
