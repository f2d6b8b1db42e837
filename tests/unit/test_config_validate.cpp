// Configs with zero, inconsistent or absurd sizes are refused when parsed or
// validated, naming the key; wrong JSON types in the files forge reads are
// forge errors, never nlohmann exceptions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/error.h"
#include "forge/model_config.h"
#include "forge/tokenizer.h"
#include "unit/this_build.h"

using namespace forge;
using nlohmann::json;

namespace {

const std::string kData = forge::testing::test_data_dir();

json fixture(const std::string& name) {
  std::ifstream in(kData + "/" + name + "/config.json");
  return json::parse(in);
}

// Expects E whose message contains `what`.
template <class E, class F>
void expect_error(F&& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << what;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for " << what << ": " << e.what();
  }
}

Gpt2Config tiny_gpt2() {
  Gpt2Config c;
  c.vocab_size = 64;
  c.n_positions = 16;
  c.n_embd = 32;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_inner = 128;
  return c;
}

}  // namespace

TEST(ConfigValidate, Gpt2StructsBuiltInCode) {
  EXPECT_NO_THROW(validate(tiny_gpt2(), "preset tiny"));
  Gpt2Config c = tiny_gpt2();
  c.n_head = 0;  // used to reach a division by zero in the model
  expect_error<ValueError>([&] { validate(c, "preset tiny"); }, "'n_head' = 0 must be positive in preset tiny");
  c = tiny_gpt2();
  c.n_head = 5;
  expect_error<ValueError>([&] { validate(c, "p"); }, "'n_head' = 5 does not divide 'n_embd' = 32");
  c = tiny_gpt2();
  c.n_inner = 0;
  expect_error<ValueError>([&] { validate(c, "p"); }, "'n_inner' = 0");
  c = tiny_gpt2();
  c.vocab_size = -1;
  expect_error<ValueError>([&] { validate(c, "p"); }, "'vocab_size' = -1");
  c = tiny_gpt2();
  c.layer_norm_epsilon = 0;
  expect_error<ValueError>([&] { validate(c, "p"); }, "'layer_norm_epsilon'");
}

TEST(ConfigValidate, LlamaStructsBuiltInCode) {
  LlamaConfig c;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  EXPECT_NO_THROW(validate(c, "p"));
  LlamaConfig z = c;
  z.num_key_value_heads = 0;
  expect_error<ValueError>([&] { validate(z, "p"); }, "'num_key_value_heads' = 0 must be positive");
  z = c;
  z.head_dim = 0;
  expect_error<ValueError>([&] { validate(z, "p"); }, "'head_dim' = 0 must be positive");
  z = c;
  z.num_key_value_heads = 3;
  expect_error<ValueError>([&] { validate(z, "p"); }, "'num_key_value_heads' = 3 does not divide");
}

TEST(ConfigValidate, HugeSizesAreRefusedBeforeTheyOverflow) {
  json g = fixture("gpt2-tiny");
  g["n_embd"] = int64_t(1) << 40;
  g["n_head"] = 1;
  expect_error<ValueError>([&] { parse_config(g.dump(), "m/config.json"); }, "'n_embd' = 1099511627776 is too large");
  g = fixture("gpt2-tiny");
  g["vocab_size"] = int64_t(1) << 30;
  g["n_embd"] = int64_t(1) << 30;
  g["n_head"] = 1;
  g["n_inner"] = 64;
  expect_error<ValueError>([&] { parse_config(g.dump(), "m/config.json"); }, "parameters");
  // The layer count sizes per-layer lists as the config is read: 2^31 layers
  // used to allocate a window for each (minutes, then out of memory).
  for (const char* name : {"llama-tiny", "mistral-tiny"}) {
    json l = fixture(name);
    l["num_hidden_layers"] = int64_t(1) << 31;
    expect_error<ValueError>([&] { parse_config(l.dump(), "m/config.json"); },
                             "'num_hidden_layers' = 2147483648 is too large");
    l["num_hidden_layers"] = 100000;
    expect_error<ValueError>([&] { parse_config(l.dump(), "m/config.json"); },
                             "'num_hidden_layers' = 100000 is more layers than forge supports (65536)");
  }
  g = fixture("gpt2-tiny");
  g["n_layer"] = 1 << 20;
  expect_error<ValueError>([&] { parse_config(g.dump(), "m/config.json"); }, "'n_layer' = 1048576 is more layers");
  // group_size 2^32 + 64 used to wrap to 64 in an int.
  json q = fixture("llama-tiny-mlx8");
  q["quantization"]["group_size"] = (int64_t(1) << 32) + 64;
  expect_error<ValueError>([&] { parse_config(q.dump(), "m/config.json"); }, "'quantization.group_size'");
  q = fixture("llama-tiny-mlx8");
  q["quantization"]["bits"] = (int64_t(1) << 32) + 8;
  expect_error<ValueError>([&] { parse_config(q.dump(), "m/config.json"); }, "'quantization.bits' = 4294967304");
}

TEST(ConfigValidate, WrongJsonTypesInTokenizerJsonAreIoErrors) {
  // Values read with json::value(): a wrong type made nlohmann throw type_error.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "forge_tok_types";
  std::filesystem::create_directories(dir);
  std::ifstream in(kData + "/tokenizer-gpt2/tokenizer.json");
  const json base = json::parse(in);
  auto write = [&](const json& j) {
    std::ofstream(dir / "tokenizer.json") << j.dump();
    return (dir / "tokenizer.json").string();
  };
  json t = base;
  t["model"]["type"] = 5;
  std::string path = write(t);
  expect_error<IoError>([&] { Tokenizer::from_path(path); }, "wrong JSON type");
  t = base;
  t["pre_tokenizer"] = {{"type", "Split"}, {"pattern", "not an object"}, {"behavior", "Isolated"}};
  path = write(t);
  expect_error<IoError>([&] { Tokenizer::from_path(path); }, "[tokenizer]");
  t = base;
  t["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", 7}}}, {"behavior", 3}};
  path = write(t);
  expect_error<IoError>([&] { Tokenizer::from_path(path); }, "[tokenizer]");
  std::filesystem::remove_all(dir);
}
