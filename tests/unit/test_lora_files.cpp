// Adapter folders read without a model (models/lora_files.h), on the seeds
// of fuzz_adapter (tests/fuzz/corpus_adapter: adapter_config.json, a NUL
// byte, adapter_model.safetensors, written by make_adapter_seeds.py for a
// one-layer Llama with hidden 8, MLP 12, KV width 4). The valid seeds give
// exactly the values the script wrote, in f32, bf16 and f16 (multiples of
// 1/16: exact in each); every bad one is refused with its error class. The
// float ranks are what the fuzz target found: "r": 1e30 was converted to an
// integer out of range (undefined behaviour, UBSan's report) and "r": 2.5
// was truncated to 2 and loaded.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "forge/error.h"
#include "models/lora_files.h"
#include "unit/cli_process.h"
#include "unit/this_build.h"

using namespace forge;
namespace fs = std::filesystem;

namespace {

const fs::path kSeeds = fs::path(forge::testing::test_data_dir()) / ".." / "fuzz" / "corpus_adapter";

const std::vector<lora::Module> kModules = {
    {"model.layers.0.self_attn.q_proj", 8, 8}, {"model.layers.0.self_attn.k_proj", 8, 4},
    {"model.layers.0.self_attn.v_proj", 8, 4}, {"model.layers.0.self_attn.o_proj", 8, 8},
    {"model.layers.0.mlp.gate_proj", 8, 12},   {"model.layers.0.mlp.up_proj", 8, 12},
    {"model.layers.0.mlp.down_proj", 12, 8}};

// Unpacks seed `name` into `dir` as an adapter folder.
fs::path unpack(const std::string& name, const fs::path& dir) {
  std::ifstream in(kSeeds / name, std::ios::binary);
  const std::string blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(blob.empty()) << name;
  const fs::path d = dir / name;
  fs::create_directories(d);
  const size_t nul = blob.find('\0');
  std::ofstream(d / "adapter_config.json", std::ios::binary) << blob.substr(0, nul);
  if (nul != std::string::npos) std::ofstream(d / "adapter_model.safetensors", std::ios::binary) << blob.substr(nul + 1);
  return d;
}

std::vector<lora::ModuleWeights> read(const fs::path& d) {
  return lora::read_adapter_weights(d, read_adapter_config(d), kModules);
}

// make_adapter_seeds.py's value i of every tensor.
float seed_value(size_t i) { return float(int((i * 7) % 13) - 6) / 16.0f; }

}  // namespace

TEST(LoraFiles, ValidSeedsGiveTheWrittenValues) {
  forge::testing::ScratchDir dir("lora_files");
  struct Case {
    const char* seed;
    int64_t rank;
    double scale;
    std::vector<size_t> modules;
  };
  const Case cases[] = {{"peft_all_modules_f32", 4, 8.0 / 4, {0, 1, 2, 3, 4, 5, 6}},
                        {"attn_rslora_bf16", 2, 4.0 / std::sqrt(2.0), {0, 2}},
                        {"mlp_f16", 1, 2.5, {4, 5, 6}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.seed);
    const fs::path d = unpack(c.seed, dir.path);
    const LoraConfig config = read_adapter_config(d);
    EXPECT_EQ(config.rank, c.rank);
    EXPECT_NEAR(config.scaling(), c.scale, 1e-12);
    const std::vector<lora::ModuleWeights> w = read(d);
    ASSERT_EQ(w.size(), c.modules.size());
    for (size_t k = 0; k < w.size(); ++k) {
      const lora::Module& m = kModules[c.modules[k]];
      ASSERT_EQ(w[k].module, c.modules[k]);
      ASSERT_EQ(int64_t(w[k].a.size()), c.rank * m.in) << m.name;
      ASSERT_EQ(int64_t(w[k].b.size()), m.out * c.rank) << m.name;
      for (size_t i = 0; i < w[k].a.size(); ++i) ASSERT_EQ(w[k].a[i], seed_value(i)) << m.name << " A " << i;
      for (size_t i = 0; i < w[k].b.size(); ++i) ASSERT_EQ(w[k].b[i], seed_value(i)) << m.name << " B " << i;
    }
  }
}

TEST(LoraFiles, BadSeedsAreRefusedWithTheirErrorClass) {
  forge::testing::ScratchDir dir("lora_files_bad");
  auto expect = [&](const char* seed, auto error, const char* says) {
    SCOPED_TRACE(seed);
    const fs::path d = unpack(seed, dir.path);
    try {
      read(d);
      ADD_FAILURE() << "accepted";
    } catch (const decltype(error)& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    }
  };
  expect("bad_no_weights_file", IoError(""), "no adapter_model.safetensors");
  expect("bad_transposed_a", ShapeError(""), "lora_A.weight");
  expect("bad_extra_key", ValueError(""), "v_proj.lora_A.weight");
  expect("bad_dora", ValueError(""), "use_dora");
  expect("bad_float_rank", IoError(""), "'r' is 2.5, expected an integer");
  expect("regression_rank_1e30", IoError(""), "expected an integer");
}

TEST(LoraFiles, ConfigValuesOutOfRangeAreErrors) {
  forge::testing::ScratchDir dir("lora_files_config");
  auto config = [&](const std::string& name, const std::string& text) {
    fs::create_directories(dir.path / name);
    std::ofstream(dir.path / name / "adapter_config.json") << text;
    return dir.path / name;
  };
  EXPECT_THROW(read_adapter_config(config("u64", R"({"r": 18446744073709551615, "target_modules": ["q_proj"]})")),
               ValueError);
  EXPECT_THROW(read_adapter_config(config("neg", R"({"r": -1e300, "target_modules": ["q_proj"]})")), IoError);
  EXPECT_THROW(read_adapter_config(config("alpha_inf", R"({"r": 4, "lora_alpha": 1e400, "target_modules": ["q_proj"]})")),
               Error);
  EXPECT_THROW(read_adapter_config(config("dup", R"({"r": 4, "r": 8, "target_modules": ["q_proj"]})")), IoError);
  EXPECT_THROW(read_adapter_config(config("target_int", R"({"r": 4, "target_modules": [7]})")), IoError);
  EXPECT_THROW(read_adapter_config(config("alpha_str", R"({"r": 4, "lora_alpha": "8", "target_modules": ["q_proj"]})")),
               IoError);
  EXPECT_THROW(read_adapter_config(config("array", R"([1, 2])")), IoError);
  const LoraConfig ok = read_adapter_config(config("ok", R"({"r": 3, "target_modules": ["q_proj"]})"));
  EXPECT_EQ(ok.rank, 3);
  EXPECT_EQ(ok.alpha, 8.0) << "PEFT's default lora_alpha";
}
