// forge init / eval / generate / bench gpt2, run as a user would: eval's
// output file against the fixture logits, generate --json parsed, error cases,
// and a 124M-size checkpoint from forge init through eval and generate on both
// backends (SLOW: writes ~500 MB; on SwiftShader it runs 1 token of a
// 3-token prompt).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "forge/safetensors.h"
#include "parity/parity.h"
#include "unit/cli_shell.h"
#include "unit/this_build.h"

namespace {

namespace fs = std::filesystem;
const std::string kData = forge::testing::test_data_dir();

using forge::testing::CliResult;
using forge::testing::last_json_line;
using forge::testing::run_forge;

CliResult run(const std::string& args, bool with_stderr = true) { return run_forge(args, with_stderr); }

// A fresh folder under the system temp dir, removed at the end of the scope.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("forge_gpt2_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};


}  // namespace

TEST(Gpt2Cli, EvalWritesFixtureLogitsAndLoss) {
  TempDir tmp("eval");
  const std::string fx = kData + "/gpt2-tiny";
  // The fixture's reference file holds input_ids [2, 16] i32: use it as the input.
  for (const char* device : {"cpu", "webgpu"}) {
    const std::string out = (tmp.path / (std::string(device) + ".safetensors")).string();
    CliResult r = run("eval --model " + fx + " --input " + fx + "/reference.safetensors --output " + out +
                      " --device " + device);
    ASSERT_EQ(r.code, 0) << r.out;
    auto got = forge::SafetensorsFile::open(out);
    auto ref = forge::SafetensorsFile::open(fx + "/reference.safetensors");
    EXPECT_EQ(got.get("logits").shape(), ref.get("logits").shape());
    // WebGPU bound: see tests/golden/test_gpt2_golden.cpp.
    const double atol = std::string(device) == "cpu" ? 1e-4 : 2e-4;
    EXPECT_TRUE(forge::testing::all_close(got.get("logits").to_f32(), ref.get("logits").to_f32(), atol, 1e-4))
        << device;
    EXPECT_NEAR(got.get("loss").to_f32()[0], ref.get("loss").to_f32()[0], 2e-5) << device;
  }
}

TEST(Gpt2Cli, EvalErrors) {
  TempDir tmp("evalerr");
  const std::string fx = kData + "/gpt2-tiny";
  CliResult r = run("eval --model " + tmp.path.string() + "/nope --input " + fx +
                    "/reference.safetensors --output " + tmp.path.string() + "/o.safetensors --device cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  // Ids beyond vocab 1000: the vocab50257 fixture's prompt ids are not all < 1000.
  std::vector<int32_t> bad = {1, 2, 1000, 3};
  forge::write_safetensors(tmp.path / "bad.safetensors",
                           {{"input_ids", forge::StDType::I32, {1, 4},
                             {reinterpret_cast<const std::byte*>(bad.data()), bad.size() * 4}}});
  r = run("eval --model " + fx + " --input " + (tmp.path / "bad.safetensors").string() + " --output " +
          (tmp.path / "o.safetensors").string() + " --device cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("input_ids[2] = 1000 is out of range for vocab size 1000"), std::string::npos) << r.out;
  r = run("eval --model " + fx + " --input " + fx + "/reference.safetensors --output x --bogus");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("bogus"), std::string::npos) << r.out;
}

TEST(Gpt2Cli, GenerateJsonMatchesFixtureGreedyTokens) {
  const std::string fx = kData + "/gpt2-tiny";
  auto ref = forge::SafetensorsFile::open(fx + "/reference.safetensors");
  std::vector<float> prompt = ref.get("generate_prompt").to_f32(), want = ref.get("generate_greedy").to_f32();
  std::string ids;
  for (float v : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(int(v));
  for (const char* extra : {"", " --no-cache"}) {
    CliResult r = run("generate --model " + fx + " --prompt-ids " + ids + " -n 24 --device cpu --json" + extra, false);
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = last_json_line(r.out);
    EXPECT_EQ(j["ids"].get<std::vector<float>>(), want) << extra;
    EXPECT_EQ(j["prompt_ids"].size(), prompt.size());
    EXPECT_FALSE(j.contains("text")) << "gpt2-tiny has no tokenizer";
    EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0);
    EXPECT_EQ(j["device"], "cpu");
  }
}

TEST(Gpt2Cli, InitTinyThenGenerateTextWithSampling) {
  TempDir tmp("tiny");
  const std::string dir = (tmp.path / "m").string();
  CliResult r = run("init --arch gpt2 --preset tiny --out " + dir + " --seed 3 --tokenizer " + kData +
                    "/tokenizer-gpt2/tokenizer.json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string gen = "generate --model " + dir + " --prompt 'Hello there' -n 6 --temperature 0.8 --top-k 40 "
                          "--top-p 0.9 --seed 11 --json --device ";
  CliResult a = run(gen + "cpu", false), b = run(gen + "cpu", false), g = run(gen + "webgpu", false);
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(g.code, 0) << g.out;
  auto ja = last_json_line(a.out), jb = last_json_line(b.out), jg = last_json_line(g.out);
  EXPECT_EQ(ja["prompt_ids"], (std::vector<int>{15496, 612}));
  EXPECT_EQ(ja["ids"], jb["ids"]) << "a fixed seed reproduces the run";
  EXPECT_EQ(ja["ids"], jg["ids"]) << "CPU and WebGPU draw the same ids";
  EXPECT_TRUE(ja["text"].is_string());
  EXPECT_EQ(ja["seed"], 11);
  // With --json stdout holds the JSON object and nothing else.
  EXPECT_EQ(a.out, ja.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  // Without --seed a sampling run draws a fresh seed and reports it.
  const std::string unseeded = "generate --model " + dir + " --prompt 'Hello there' -n 6 --temperature 0.8 --json "
                               "--device cpu";
  auto u1 = last_json_line(run(unseeded, false).out), u2 = last_json_line(run(unseeded, false).out);
  EXPECT_NE(u1["seed"], u2["seed"]);
}

TEST(Gpt2Cli, GenerateErrors) {
  const std::string fx = kData + "/gpt2-tiny";
  CliResult r = run("generate --model " + fx + " --prompt hello --device cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("needs a tokenizer"), std::string::npos) << r.out;
  r = run("generate --model " + fx + " --prompt-ids 1,5000 --device cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("prompt id 5000 at position 1 is out of range for vocab size 1000"), std::string::npos)
      << r.out;
  // Past the context: stop there with a notice (and the tokens that fit).
  r = run("generate --model " + fx + " --prompt-ids 1,2,3 -n 62 --device cpu --json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("stopped at the context length 64"), std::string::npos) << r.out;
  EXPECT_EQ(last_json_line(r.out)["ids"].size(), 61u) << r.out;
  EXPECT_EQ(last_json_line(r.out)["stop_reason"], "context") << r.out;
  r = run("generate --model " + fx + " --prompt-ids 1,2,3 --top-p 1.5 --device cpu");
  EXPECT_EQ(r.code, 2) << "a bad value is a usage error";
  EXPECT_NE(r.out.find("--top-p must be in (0, 1]"), std::string::npos) << r.out;
  r = run("generate --model " + fx + " --prompt-ids 1,x --device cpu");
  EXPECT_EQ(r.code, 2) << "a bad id list is a usage error";
  EXPECT_NE(r.out.find("'x'"), std::string::npos) << r.out;
  r = run("generate --model " + fx + " --prompt-ids 1 --greedy --temperature 0.5 --device cpu");
  EXPECT_EQ(r.code, 2) << "flags that exclude each other are a usage error";
  r = run("generate --model " + fx + " --prompt-ids 1 --frobnicate");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("frobnicate"), std::string::npos) << r.out;
  r = run("init --arch gpt2 --preset 7B --out /tmp/forge_never_written");
  EXPECT_EQ(r.code, 2);  // a usage error
  EXPECT_NE(r.out.find("unknown preset '7B'"), std::string::npos) << r.out;
}

// SLOW (~4-5 minutes on SwiftShader, most of it uploading and running 124M
// parameters on a software GPU twice): a GPT-2 124M checkpoint written by forge init, run through
// eval and generate on the CPU and on WebGPU (SwiftShader here).
TEST(Gpt2Cli, Init124MRunsEvalAndGenerateOnBothBackends) {
  TempDir tmp("124m");
  const std::string dir = (tmp.path / "m").string();
  CliResult r = run("init --arch gpt2 --preset 124M --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_GT(fs::file_size(fs::path(dir) / "model.safetensors"), 490'000'000u);
  std::vector<int32_t> ids = {464, 3616, 286};
  forge::write_safetensors(tmp.path / "in.safetensors",
                           {{"input_ids", forge::StDType::I32, {1, 3},
                             {reinterpret_cast<const std::byte*>(ids.data()), ids.size() * 4}}});
  std::vector<float> logits[2];
  std::vector<nlohmann::json> gens;
  int i = 0;
  for (const char* device : {"cpu", "webgpu"}) {
    const std::string out = (tmp.path / "out.safetensors").string();
    r = run("eval --model " + dir + " --input " + (tmp.path / "in.safetensors").string() + " --output " + out +
            " --device " + device);
    ASSERT_EQ(r.code, 0) << r.out;
    auto f = forge::SafetensorsFile::open(out);
    EXPECT_EQ(f.get("logits").shape(), (forge::Shape{1, 3, 50257}));
    // Random init: the loss is near log(50257) = 10.8.
    EXPECT_NEAR(f.get("loss").to_f32()[0], 10.8, 0.5) << device;
    logits[i++] = f.get("logits").to_f32();
    r = run("generate --model " + dir + " --prompt-ids 464,3616,286 -n 1 --json --device " + device, false);
    ASSERT_EQ(r.code, 0) << r.out;
    gens.push_back(last_json_line(r.out));
  }
  EXPECT_TRUE(forge::testing::all_close(logits[1], logits[0], 2e-4, 1e-4));
  EXPECT_EQ(gens[0]["ids"], gens[1]["ids"]);
  EXPECT_EQ(gens[0]["ids"].size(), 1u);
}
