// forge train run as a user would: parity mode against the reference losses,
// a run on text that resumes to exactly the losses of an uninterrupted one
// (CPU), its checkpoint loading in forge eval, and the error cases.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "unit/cli_shell.h"
#include "unit/this_build.h"

namespace {

const std::string kTiny = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";

using forge::testing::CliResult;

CliResult run(const std::string& args, bool with_stderr = true) { return forge::testing::run_forge(args, with_stderr); }

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("forge_train_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// Some English-like text, deterministic.
void write_text(const std::filesystem::path& p) {
  const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "far", "away", "from",
                         "home", "to", "see", "sea"};
  std::ofstream f(p);
  uint32_t s = 7;
  for (int i = 0; i < 1500; ++i) {
    s = s * 1103515245u + 12345u;
    f << words[(s >> 16) % 17] << ((s >> 8) % 9 == 0 ? ".\n" : " ");
  }
}

// step -> the logged loss text (exact, as printed with round-trip precision).
std::map<int, std::string> step_losses(const std::filesystem::path& log) {
  std::map<int, std::string> out;
  std::ifstream f(log);
  std::string line;
  while (std::getline(f, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) out[j["step"].get<int>()] = j["loss"].dump();
  }
  return out;
}

}  // namespace

TEST(TrainCli, ParityModeMatchesReferenceLosses) {
  const CliResult r = run("train --model " + kTiny + " --fixed-batch " + kTiny +
                              "/reference.safetensors --steps 10 --lr 1e-3 --weight-decay 0.01 --json --device cpu",
                          false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(last_line(r.out));
  std::ifstream rf(kTiny + "/reference.json");
  const auto ref = nlohmann::json::parse(rf);
  ASSERT_EQ(j["losses"].size(), 10u);
  for (size_t i = 0; i < 10; ++i)
    EXPECT_NEAR(j["losses"][i].get<double>(), ref["losses"][i].get<double>(), 2e-5) << "step " << i;  // as the golden test
  EXPECT_GT(j["grad_norm0"].get<double>(), 0.0);
}

TEST(TrainCli, ResumeReproducesUninterruptedRunAndCheckpointLoads) {
  TempDir dir("resume");
  write_text(dir.path / "text.txt");
  auto command = [&](const std::string& seed) {
    return "train --data " + (dir.path / "text.txt").string() + " --model " + kTiny +
           " --tokenizer bytes --steps 6 --batch 4 --micro-batch 2 --seq 16 --dropout 0.1 "
           "--warmup 2 --lr 3e-3 --eval-every 3 --eval-batches 1 --device cpu --seed " + seed + " --out ";
  };
  const std::string common = command("5");
  CliResult full = run(common + (dir.path / "full").string() + " --json");
  ASSERT_EQ(full.code, 0) << full.out;
  const auto summary = nlohmann::json::parse(last_line(full.out));
  EXPECT_EQ(summary["steps"], 6);
  CliResult part = run(common + (dir.path / "part").string() + " --stop-at 3");
  ASSERT_EQ(part.code, 0) << part.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path / "part/checkpoint/optimizer.safetensors"));
  CliResult wrong = run(command("6") + (dir.path / "part").string() + " --resume");
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.out.find("--seed 6 contradicts"), std::string::npos) << wrong.out;
  CliResult resumed = run(common + (dir.path / "part").string() + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.out;

  const auto a = step_losses(dir.path / "full/log.jsonl"), b = step_losses(dir.path / "part/log.jsonl");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a, b);  // exact: same text at round-trip precision

  // The checkpoint is an HF folder forge eval loads.
  CliResult ev = run("eval --model " + (dir.path / "full/checkpoint").string() + " --input " + kTiny +
                     "/reference.safetensors --output " + (dir.path / "eval.safetensors").string() + " --device cpu");
  EXPECT_EQ(ev.code, 0) << ev.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path / "full/tokens.bin"));
}

TEST(TrainCli, ErrorCases) {
  TempDir dir("errors");
  CliResult r = run("train --data /nonexistent/forge.txt --init tiny --tokenizer bytes --out " + dir.path.string() +
                    " --device cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--data '/nonexistent/forge.txt' does not exist"), std::string::npos) << r.out;

  r = run("train --model " + kTiny + " --fixed-batch " + kTiny + "/reference.safetensors --steps abc");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--steps"), std::string::npos) << r.out;

  r = run("train --model " + kTiny + " --fixed-batch " + kTiny + "/reference.safetensors --no-such-flag");
  EXPECT_NE(r.code, 0);

  write_text(dir.path / "t.txt");
  r = run("train --data " + (dir.path / "t.txt").string() + " --model " + kTiny +
          " --tokenizer bytes --batch 6 --micro-batch 4 --out " + dir.path.string() + " --device cpu");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("multiple of --micro-batch"), std::string::npos) << r.out;

  r = run("train --fixed-batch " + kTiny + "/reference.safetensors --steps 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--fixed-batch needs --model"), std::string::npos) << r.out;

  r = run("train --data " + (dir.path / "t.txt").string() + " --model " + kTiny + " --resume --tokenizer bytes --out " +
          (dir.path / "none").string() + " --device cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no checkpoint"), std::string::npos) << r.out;
}

TEST(TrainCli, BenchTrainReportsJson) {
  const CliResult r = run("bench train --preset tiny --device cpu --steps 1 --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["bench"], "train");
  ASSERT_EQ(j["shapes"].size(), 2u);
  EXPECT_EQ(j["shapes"][0]["batch"], 4);
  EXPECT_EQ(j["shapes"][1]["seq"], 128);  // B8 x T1024 capped at the preset's context length
  EXPECT_GT(j["shapes"][0]["tokens_per_s"].get<double>(), 0.0);
}

TEST(TrainCli, BenchTrainShapes) {
  CliResult r = run("bench train --preset tiny --device cpu --steps 1 --shapes 2x16 --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(last_line(r.out));
  ASSERT_EQ(j["shapes"].size(), 1u);
  EXPECT_EQ(j["shapes"][0]["batch"], 2);
  EXPECT_EQ(j["shapes"][0]["seq"], 16);

  r = run("bench train --preset tiny --device cpu --shapes 4by64");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("'4by64' is not BxT"), std::string::npos) << r.out;
}
