// Helpers of the LoRA command-line tests: logits files, forge merge then
// forge eval of the merged model, and the step losses of a run's log.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forge/safetensors.h"
#include "unit/cli_process.h"

namespace forge::testing {

inline std::vector<float> logits_of(const std::filesystem::path& file) {
  return SafetensorsFile::open(file).get("logits").to_f32();
}

// forge merge MODEL + ADAPTER into DIR/merged, then forge eval of the merged
// model on `input` (CPU): its logits, or none (which no reference matches)
// when a command failed, reported as a failure here.
inline std::vector<float> merged_logits(const ScratchDir& dir, const std::string& model, const std::string& adapter,
                                        const std::string& input) {
  const CliRun m = run_cli({"merge", "--model", model, "--adapter", adapter, "--out", (dir.path / "merged").string()},
                           dir.path);
  EXPECT_EQ(m.code, 0) << m.out;
  if (m.code != 0) return {};
  const CliRun e = run_cli({"eval", "--model", (dir.path / "merged").string(), "--input", input, "--output",
                            (dir.path / "merged.safetensors").string(), "--device", "cpu"},
                           dir.path);
  EXPECT_EQ(e.code, 0) << e.out;
  if (e.code != 0) return {};
  return logits_of(dir.path / "merged.safetensors");
}

// The "loss" of every step line of a run's log.jsonl, in order.
inline std::vector<double> logged_losses(const std::filesystem::path& log) {
  std::ifstream f(log);
  std::vector<double> out;
  for (std::string line; std::getline(f, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) out.push_back(j["loss"].get<double>());
  }
  return out;
}

}  // namespace forge::testing
