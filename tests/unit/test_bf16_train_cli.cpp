// --dtype on the commands that train and write models: LoRA over a base kept
// in bf16 on the device computes exactly what LoRA over the same values in
// f32 computes (bf16 widens exactly); full training refuses a bf16 base;
// `forge merge --dtype bf16` writes bf16 weights and says so in config.json.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/dtype.h"
#include "forge/error.h"
#include "forge/model.h"
#include "forge/safetensors.h"
#include "forge/train_fixed.h"
#include "golden/reference_fixture.h"
#include "unit/cli_process.h"
#include "unit/lora_cli.h"
#include "unit/this_build.h"

using namespace forge;
using namespace forge::testing;

namespace {

namespace fs = std::filesystem;

bool is_projection(const std::string& name) {
  const std::string tail = "_proj.weight";
  return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

// A copy of `src` whose projection weights hold their bf16-rounded values, in
// f32: what `--dtype bf16` puts on the device (norms and embeddings stay f32).
void write_rounded_copy(const fs::path& src, const fs::path& dst) {
  fs::create_directories(dst);
  fs::copy_file(src / "config.json", dst / "config.json");
  SafetensorsFile f = SafetensorsFile::open(src / "model.safetensors");
  std::vector<std::vector<float>> values;
  std::vector<std::string> names;
  for (const TensorInfo& t : f.tensors()) names.push_back(t.name);
  for (const std::string& n : names) {
    values.push_back(f.get(n).to_f32());
    if (is_projection(n))
      for (float& v : values.back()) v = bf16_to_f32(f32_to_bf16(v));
  }
  std::vector<TensorToWrite> out;
  for (size_t i = 0; i < names.size(); ++i)
    out.push_back({names[i], StDType::F32, f.get(names[i]).shape(), std::as_bytes(std::span(values[i]))});
  write_safetensors(dst / "model.safetensors", out);
}

std::vector<double> fixed_batch_losses(const ScratchDir& dir, const std::vector<std::string>& args) {
  const CliRun r = run_cli(args, dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  if (r.code != 0) return {};
  return nlohmann::json::parse(last_line(r.out))["losses"].get<std::vector<double>>();
}

}  // namespace

TEST(Bf16TrainCli, LoraOverABf16BaseEqualsLoraOverItsValuesInF32) {
  ScratchDir dir("bf16_train_lora");
  Fixture base("mistral-tiny");  // f32 projections, most of them not bf16 values
  write_rounded_copy(base.dir, dir.path / "rounded");
  std::vector<std::string> devices{"cpu"};
  if (forge::testing::webgpu_built()) devices.push_back("webgpu");
  for (const std::string& device : devices) {
    auto train = [&](const std::string& model, const std::string& dtype) {
      return fixed_batch_losses(dir, {"train", "--model", model, "--fixed-batch", base.dir + "/reference.safetensors",
                                      "--lora-rank", "4", "--steps", "3", "--lr", "1e-2", "--weight-decay", "0",
                                      "--json", "--device", device, "--dtype", dtype});
    };
    const std::vector<double> bf16 = train(base.dir, "bf16");
    const std::vector<double> rounded = train((dir.path / "rounded").string(), "f32");
    const std::vector<double> f32 = train(base.dir, "f32");
    ASSERT_EQ(bf16.size(), 3u) << device;
    ASSERT_EQ(rounded.size(), 3u) << device;
    ASSERT_EQ(f32.size(), 3u) << device;
    double moved = 0;
    for (size_t i = 0; i < bf16.size(); ++i) {
      EXPECT_NEAR(bf16[i], rounded[i], 1e-5) << device << " step " << i;
      EXPECT_NEAR(bf16[i], f32[i], 3e-2) << device << " step " << i;  // the base rounded to bf16
      moved = std::max(moved, std::abs(bf16[i] - f32[i]));
    }
    EXPECT_GT(moved, 1e-6) << device << ": the bf16 base computed exactly what the f32 base does";
    EXPECT_LT(bf16.back(), bf16.front()) << device;
  }
}

TEST(Bf16TrainCli, FullTrainingRefusesABf16Base) {
  ScratchDir dir("bf16_train_full");
  Fixture base("llama3-tiny");
  const CliRun r = run_cli({"train", "--model", base.dir, "--fixed-batch", base.dir + "/reference.safetensors",
                            "--steps", "1", "--json", "--device", "cpu", "--dtype", "bf16"},
                           dir.path);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--dtype bf16 keeps the frozen base of a LoRA run"), std::string::npos) << r.out;
  const CliRun b = run_cli({"bench", "train", "--arch", "smollm2-135m", "--dtype", "bf16", "--device", "cpu"}, dir.path);
  EXPECT_EQ(b.code, 2) << b.out;
  EXPECT_NE(b.out.find("frozen LoRA base"), std::string::npos) << b.out;
  // The library says the same to a caller that skips the command line.
  for (const char* model : {"llama3-tiny", "gpt2-tiny"}) {
    auto m = load_model(std::string(forge::testing::test_data_dir()) + "/" + model, Device::cpu(), DType::BF16);
    EXPECT_THROW(FixedBatchTrainer(*m, Gpt2TrainConfig{}), ValueError) << model;
  }
}

TEST(Bf16TrainCli, MergeWritesBf16Weights) {
  ScratchDir dir("bf16_merge");
  Fixture base("llama3-tiny"), ref("llama3-tiny/adapter");
  const std::string input = ref.dir + "/reference.safetensors";
  auto merge = [&](const std::string& dtype) {
    const fs::path out = dir.path / ("merged_" + dtype);
    const CliRun m = run_cli({"merge", "--model", base.dir, "--adapter", ref.dir, "--out", out.string(), "--dtype", dtype},
                             dir.path);
    EXPECT_EQ(m.code, 0) << m.out;
    const CliRun e = run_cli({"eval", "--model", out.string(), "--input", input, "--output",
                              (out / "logits.safetensors").string(), "--device", "cpu"},
                             dir.path);
    EXPECT_EQ(e.code, 0) << e.out;
    return out;
  };
  const fs::path f32 = merge("f32"), bf16 = merge("bf16");
  SafetensorsFile w = SafetensorsFile::open(bf16 / "model.safetensors");
  ASSERT_FALSE(w.tensors().empty());
  for (const TensorInfo& t : w.tensors()) EXPECT_EQ(t.dtype, StDType::BF16) << t.name;
  std::ifstream c(bf16 / "config.json");
  const auto config = nlohmann::json::parse(c);
  for (const char* key : {"dtype", "torch_dtype"})
    if (config.contains(key)) EXPECT_EQ(config[key], "bfloat16") << key;
  EXPECT_LT(fs::file_size(bf16 / "model.safetensors"), fs::file_size(f32 / "model.safetensors") * 6 / 10);
  // Each bf16 weight is its f32 twin rounded: the logits move a little.
  const std::vector<float> a = logits_of(f32 / "logits.safetensors"), b = logits_of(bf16 / "logits.safetensors");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  EXPECT_LT(worst, 5e-2);
  EXPECT_GT(worst, 0.0);
}
