// config.json of every family forge runs: what each family's keys turn into
// (biases, sliding windows, quantization overrides), and the clear errors for
// values forge does not implement, each naming the field and the value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "forge/error.h"
#include "forge/model_config.h"

using namespace forge;
using json = nlohmann::json;

namespace {

json llama() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", 100},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 3},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"max_position_embeddings", 256},
          {"rope_theta", 10000.0}};
}

ModelConfig parse(const json& j) { return parse_config(j.dump(), "test/config.json"); }

template <class E>
void expect_error(const json& j, const std::string& needle) {
  try {
    parse(j);
    FAIL() << "no error, expected one with: " << needle;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(ModelFamilies, Qwen2HasQkvBiasOnly) {
  json j = llama();
  j["model_type"] = "qwen2";
  j["architectures"] = {"Qwen2ForCausalLM"};
  const ModelConfig m = parse(j);
  EXPECT_EQ(m.architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(m.llama().has_bias_q());
  EXPECT_FALSE(m.llama().attention_bias);
  EXPECT_TRUE(m.llama().layer_window.empty());
}

TEST(ModelFamilies, SlidingWindows) {
  json j = llama();
  j["model_type"] = "mistral";
  j["architectures"] = {"MistralForCausalLM"};
  j["sliding_window"] = 16;
  EXPECT_EQ(parse(j).llama().layer_window, (std::vector<int64_t>{16, 16, 16}));
  j["sliding_window"] = nullptr;  // Mistral v0.2 and later: full attention
  EXPECT_TRUE(parse(j).llama().layer_window.empty());

  json q = llama();
  q["model_type"] = "qwen2";
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["sliding_window"] = 32;
  EXPECT_TRUE(parse(q).llama().layer_window.empty()) << "use_sliding_window defaults to false";
  q["use_sliding_window"] = true;
  q["max_window_layers"] = 1;
  EXPECT_EQ(parse(q).llama().layer_window, (std::vector<int64_t>{0, 32, 32}));
  q["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
  EXPECT_EQ(parse(q).llama().layer_window, (std::vector<int64_t>{32, 0, 32}));
  EXPECT_EQ(parse(q).llama().window(1), 0);
  q["layer_types"] = {"sliding_attention", "chunked_attention", "full_attention"};
  expect_error<ValueError>(q, "'layer_types[1]' \"chunked_attention\"");
  q["layer_types"] = {"full_attention"};
  expect_error<IoError>(q, "'layer_types' must be a list of 3 strings");
}

TEST(ModelFamilies, QuantizationOverrides) {
  json j = llama();
  j["quantization"] = {{"group_size", 64},
                       {"bits", 4},
                       {"model.layers.0.mlp.down_proj", {{"group_size", 32}, {"bits", 8}}},
                       {"lm_head", false}};
  const ModelConfig m = parse(j);
  ASSERT_TRUE(m.quantization);
  auto down = m.quantization->for_module("model.layers.0.mlp.down_proj");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->bits, 8);
  EXPECT_EQ(down->group_size, 32);
  EXPECT_FALSE(m.quantization->for_module("lm_head"));
  auto other = m.quantization->for_module("model.layers.1.mlp.down_proj");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->bits, 4);
  EXPECT_EQ(other->group_size, 64);

  j["quantization"]["model.layers.0.mlp.down_proj"]["bits"] = 3;
  expect_error<ValueError>(j, "'quantization.model.layers.0.mlp.down_proj.bits' = 3 is not one of 2, 4, 8");
  j["quantization"]["model.layers.0.mlp.down_proj"] = "yes";
  expect_error<IoError>(j, "expected {group_size, bits} or false");
  j["quantization"] = {{"group_size", 16}, {"bits", 4}};
  expect_error<ValueError>(j, "'quantization.group_size' = 16");
  j["quantization"] = {{"group_size", 64}, {"bits", 6}};
  expect_error<ValueError>(j, "'quantization.bits' = 6");
}

TEST(ModelFamilies, UnsupportedValuesNameFieldAndValue) {
  json j = llama();
  j["model_type"] = "gemma2";
  expect_error<ValueError>(j, "unsupported 'model_type' 'gemma2'");
  j = llama();
  j["architectures"] = {"LlamaForSequenceClassification"};
  expect_error<ValueError>(j, "unsupported 'architectures' value 'LlamaForSequenceClassification'");
  j = llama();
  j["hidden_act"] = "gelu";
  expect_error<ValueError>(j, "unsupported 'hidden_act' 'gelu'");
  j = llama();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error<ValueError>(j, "unsupported RoPE scaling type 'yarn'");
  j = llama();
  j["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 2.0}, {"rope_theta", 10000.0}};
  expect_error<ValueError>(j, "unsupported RoPE scaling type 'dynamic'");
}

TEST(ModelFamilies, RopeScalingBothConfigStyles) {
  json top = llama();
  top["rope_theta"] = 500000.0;
  top["rope_scaling"] = {{"rope_type", "llama3"},       {"factor", 8.0},
                         {"low_freq_factor", 1.0},      {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 64}};
  json v5 = llama();
  v5.erase("rope_theta");
  v5["rope_parameters"] = {{"rope_type", "llama3"},       {"factor", 8.0},
                           {"low_freq_factor", 1.0},      {"high_freq_factor", 4.0},
                           {"original_max_position_embeddings", 64}, {"rope_theta", 500000.0}};
  for (const json& j : {top, v5}) {
    const LlamaConfig c = parse(j).llama();
    ASSERT_TRUE(c.rope_scaling);
    EXPECT_EQ(c.rope_scaling->type, "llama3");
    EXPECT_EQ(c.rope_scaling->factor, 8.0);
    EXPECT_EQ(c.rope_scaling->original_max_position_embeddings, 64);
    EXPECT_EQ(c.rope_theta, 500000.0);
  }
  json lin = llama();
  lin["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_EQ(parse(lin).llama().rope_scaling->type, "linear");
}
