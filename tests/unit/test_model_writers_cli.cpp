// The commands that write a model folder (quantize, merge, init, train
// --fixed-batch --out) write it whole or not at all: a full disk
// (RLIMIT_FSIZE) leaves neither the folder nor a temporary one, an existing
// folder keeps its files, "out/" names the same folder as "out", and a file
// in the way is named before the work.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_process.h"
#include "unit/this_build.h"

namespace fs = std::filesystem;
using forge::testing::CliOptions;
using forge::testing::read_bytes;
using forge::testing::run_cli;
using forge::testing::ScratchDir;

namespace {

const std::string kData = forge::testing::test_data_dir();

// Each command with its output folder last.
std::vector<std::vector<std::string>> writers(const fs::path& out) {
  const std::string llama3 = kData + "/llama3-tiny", o = out.string();
  return {
      {"quantize", "-m", kData + "/llama-tiny", "--bits", "4", "--out", o},
      {"merge", "-m", llama3, "--adapter", llama3 + "/adapter", "--out", o},
      {"init", "--config", kData + "/llama-tiny/config.json", "--out", o},
      {"train", "-m", llama3, "--fixed-batch", llama3 + "/reference.safetensors", "--steps", "1", "--device", "cpu",
       "--out", o},
  };
}

// Names in `dir`, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST(ModelWritersCli, FullDiskLeavesNothingBehind) {
  ScratchDir dir("writers_full");
  CliOptions small;
  small.max_file_size = 40000;  // every model.safetensors here is larger
  for (const auto& args : writers(dir.path / "out")) {
    SCOPED_TRACE(args[0]);
    const auto r = run_cli(args, dir.path, small);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("File too large"), std::string::npos) << r.out;
    EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"cli_output.txt"}) << "a folder was left behind";
  }
  // An existing folder keeps what it had: no new config beside old weights.
  const fs::path kept = dir.path / "kept";
  fs::create_directories(kept);
  std::ofstream(kept / "notes.md") << "mine";
  for (const auto& args : writers(kept)) {
    SCOPED_TRACE(args[0]);
    EXPECT_EQ(run_cli(args, dir.path, small).code, 1);
    EXPECT_EQ(names_in(kept), std::vector<std::string>{"notes.md"});
  }
}

// A file as --out, or as a folder on the way to it, is named before any
// work: train --fixed-batch prints no training step, init draws nothing.
TEST(ModelWritersCli, AFileAsTheFolderIsNamedBeforeTheWork) {
  ScratchDir dir("writers_file");
  const fs::path file = dir.path / "a_file";
  std::ofstream(file) << "mine";
  for (const fs::path& out : {file, file / "sub" / "model"}) {
    auto cases = writers(out);
    cases.push_back({"train", "--data", kData + "/heldout-fortunes.txt", "--preset", "tiny", "--tokenizer", "bytes",
                     "--steps", "1", "--batch", "2", "--seq", "16", "--device", "cpu", "--out", out.string()});
    for (const auto& args : cases) {
      SCOPED_TRACE(args[0] + " --out " + out.string());
      const auto r = run_cli(args, dir.path);
      EXPECT_EQ(r.code, 1) << r.out;
      EXPECT_NE(r.out.find("'" + file.string() + "' is a file, not a folder"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("filesystem error"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("loss"), std::string::npos) << "trained before refusing --out: " << r.out;
      EXPECT_EQ(read_bytes(file), "mine");
    }
  }
}

TEST(ModelWritersCli, TrailingSlashNamesTheSameFolder) {
  ScratchDir dir("writers_slash");
  int i = 0;
  for (auto args : writers(dir.path / "x")) {
    SCOPED_TRACE(args[0]);
    const fs::path out = dir.path / ("out" + std::to_string(i++));
    if (i % 2 == 0) {  // an existing folder with a file of its own
      fs::create_directories(out);
      std::ofstream(out / "notes.md") << "mine";
    }
    args.back() = out.string() + "/";
    const auto r = run_cli(args, dir.path);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(fs::exists(out / "model.safetensors"));
    EXPECT_TRUE(fs::exists(out / "config.json"));
    if (i % 2 == 0) EXPECT_EQ(read_bytes(out / "notes.md"), "mine");
    for (const auto& name : names_in(dir.path)) EXPECT_EQ(name.find(".partial-"), std::string::npos) << name;
  }
}
