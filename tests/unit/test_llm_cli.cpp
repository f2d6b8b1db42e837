// The Llama family through the command line exactly as users (and
// acceptance) call it: `forge eval` writes the fixture's logits and loss,
// `forge generate --prompt-ids ... --greedy --json` gives its greedy ids, on
// folders without tokenizer files; `forge inspect` reports the bytes that
// loading puts on the device.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "forge/model.h"
#include "forge/safetensors.h"
#include "parity/parity.h"
#include "unit/cli_shell.h"
#include "unit/this_build.h"

namespace {

namespace fs = std::filesystem;
const std::string kData = forge::testing::test_data_dir();

using forge::testing::CliResult;
using forge::testing::last_json_line;

CliResult run(const std::string& args) { return forge::testing::run_forge(args, false); }

std::string id_list(const std::vector<float>& v) {
  std::string s;
  for (float x : v) s += (s.empty() ? "" : ",") + std::to_string(int(x));
  return s;
}

void check_fixture(const std::string& name, const std::string& device) {
  const std::string dir = kData + "/" + name;
  auto ref = forge::SafetensorsFile::open(dir + "/reference.safetensors");
  const fs::path out = fs::temp_directory_path() / ("forge_llm_cli_" + name + "_" + std::to_string(::getpid()) + ".st");
  CliResult r = run("eval --model " + dir + " --input " + dir + "/reference.safetensors --output " + out.string() +
                    " --device " + device);
  ASSERT_EQ(r.code, 0) << r.out;
  {
    auto got = forge::SafetensorsFile::open(out);
    const double atol = device == "cpu" ? 1e-4 : 1e-3;
    EXPECT_TRUE(forge::testing::all_close(got.get("logits").to_f32(), ref.get("logits").to_f32(), atol, 1e-4))
        << name << " on " << device;
    EXPECT_NEAR(got.get("loss").to_f32()[0], ref.get("loss").to_f32()[0], atol) << name << " on " << device;
  }
  fs::remove(out);
  r = run("generate --model " + dir + " --prompt-ids " + id_list(ref.get("generate_prompt").to_f32()) +
          " -n 24 --greedy --json --device " + device);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["ids"].get<std::vector<float>>(), ref.get("generate_greedy").to_f32())
      << name << " on " << device;
}

}  // namespace

TEST(LlmCli, EvalAndGenerateCpu) {
  for (const char* name : {"llama-tiny", "llama3-tiny", "qwen2-tiny", "mistral-tiny", "llama-tiny-mlx8",
                           "llama-tiny-mlx4"})
    check_fixture(name, "cpu");
}

TEST(LlmCli, EvalAndGenerateWebGpu) {
  for (const char* name : {"mistral-tiny", "llama-tiny-mlx4"}) check_fixture(name, "webgpu");
}

TEST(LlmCli, InspectReportsDeviceBytes) {
  for (const char* name : {"llama-tiny", "llama-tiny-mlx4", "mistral-tiny"}) {
    CliResult r = run("inspect " + kData + "/" + name + " --json");
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    auto model = forge::load_model(kData + "/" + name, forge::Device::cpu());
    EXPECT_EQ(j["device_bytes"].get<uint64_t>(), model->info().device_bytes) << name;
  }
}

// --dtype bf16: inspect's bytes are those of the bf16 load (the projections
// in 16 bits; a quantized checkpoint unchanged), and generate runs it.
TEST(LlmCli, Bf16WeightsOnTheDevice) {
  for (const char* name : {"llama-tiny", "gpt2-tiny", "llama-tiny-mlx4"}) {
    CliResult r = run("inspect " + kData + "/" + name + " --json --dtype bf16");
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    auto model = forge::load_model(kData + "/" + name, forge::Device::cpu(), forge::DType::BF16);
    EXPECT_EQ(j["device_bytes"].get<uint64_t>(), model->info().device_bytes) << name;
    EXPECT_EQ(j["device_dtype"], "bf16") << name;
  }
  const std::string dir = kData + "/llama-tiny";
  auto ref = forge::SafetensorsFile::open(dir + "/reference.safetensors");
  CliResult r = run("generate --model " + dir + " --prompt-ids " + id_list(ref.get("generate_prompt").to_f32()) +
                    " -n 24 --greedy --json --device cpu --dtype bf16");
  ASSERT_EQ(r.code, 0) << r.out;
  // llama-tiny is a bf16 checkpoint: its bf16 load keeps Hugging Face's tokens.
  EXPECT_EQ(last_json_line(r.out)["ids"].get<std::vector<float>>(), ref.get("generate_greedy").to_f32());
  r = run("generate --model " + dir + " --prompt-ids 1,2 -n 2 --device cpu --dtype f16");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(LlmCli, UnsupportedConfigIsAClearError) {
  const fs::path dir = fs::temp_directory_path() / ("forge_llm_cli_bad_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(kData + "/llama-tiny", dir, fs::copy_options::recursive);
  auto cfg = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  cfg["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  std::ofstream(dir / "config.json") << cfg.dump();
  const CliResult r = forge::testing::run_forge("generate --model " + dir.string() + " --prompt-ids 1,2 -n 2 --device cpu");
  EXPECT_EQ(r.code, 1);
  const std::string& out = r.out;
  EXPECT_NE(out.find("unsupported RoPE scaling type 'yarn'"), std::string::npos) << out;
  fs::remove_all(dir);
}
