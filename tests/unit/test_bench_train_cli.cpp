// The contract of `forge bench train --arch ... [--lora-rank R] --json` on a
// tiny config (llama3-tiny's config.json; random weights): the JSON fields
// and the counts of what trains, computed here from the config, not the speed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

#include "unit/cli_process.h"
#include "unit/this_build.h"

using namespace forge::testing;

namespace {

nlohmann::json bench(const std::vector<std::string>& extra) {
  ScratchDir dir("bench_train_cli");
  const std::string config = std::string(forge::testing::test_data_dir()) + "/llama3-tiny/config.json";
  std::vector<std::string> args = {"bench",  "train", "--arch",   config, "--shapes",
                                   "1x16",   "--steps", "3",       "--device", "cpu", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliRun r = run_cli(args, dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(last_line(r.out));
}

}  // namespace

TEST(BenchTrainCli, FullAndLoraOfALlamaConfig) {
  const nlohmann::json full = bench({});
  EXPECT_EQ(full["bench"], "train");
  EXPECT_EQ(full["training"], "full");
  EXPECT_EQ(full["lora_rank"], 0);
  ASSERT_EQ(full["shapes"].size(), 1u);
  const nlohmann::json& f = full["shapes"][0];
  EXPECT_EQ(f["batch"], 1);
  EXPECT_EQ(f["seq"], 16);
  EXPECT_GT(f["step_s"].get<double>(), 0.0);
  EXPECT_GT(f["tokens_per_s"].get<double>(), 0.0);
  // Every timed step, after at least two warm-up steps (the first, then a
  // second's worth); the median and the best among them.
  EXPECT_GE(f["warmup_steps"].get<int>(), 2);
  ASSERT_EQ(f["steps_s"].size(), 3u);
  std::vector<double> each = f["steps_s"].get<std::vector<double>>();
  std::sort(each.begin(), each.end());
  EXPECT_DOUBLE_EQ(f["best_step_s"].get<double>(), each[0]);
  EXPECT_DOUBLE_EQ(f["median_step_s"].get<double>(), each[1]);
  EXPECT_NEAR(f["step_s"].get<double>(), (each[0] + each[1] + each[2]) / 3, 1e-12);
  const int64_t params = full["parameters"].get<int64_t>();
  EXPECT_EQ(f["trained_parameters"].get<int64_t>(), params);
  EXPECT_EQ(f["state_bytes"].get<int64_t>(), 16 * params);  // f32 weights, gradients, two moments
  EXPECT_EQ(f["device_peak_bytes"].get<int64_t>(), 0);      // the CPU's tensors live on the host heap
  EXPECT_GT(f["peak_rss_bytes"].get<int64_t>(), 0);

  const nlohmann::json lora = bench({"--lora-rank", "2"});
  EXPECT_EQ(lora["training"], "lora");
  EXPECT_EQ(lora["lora_rank"], 2);
  const nlohmann::json& l = lora["shapes"][0];
  EXPECT_GT(l["tokens_per_s"].get<double>(), 0.0);
  // q [128 <- 128], k and v [64 <- 128] (2 kv heads of 32), o [128 <- 128]:
  // r * (in + out) each, two layers.
  const int64_t trained = 2 * 2 * ((128 + 128) + 2 * (128 + 64) + (128 + 128));
  EXPECT_EQ(l["trained_parameters"].get<int64_t>(), trained);
  EXPECT_EQ(l["state_bytes"].get<int64_t>(), 4 * params + 12 * trained);  // the base frozen
}

TEST(BenchTrainCli, LoraRankNeedsAnArch) {
  ScratchDir dir("bench_train_cli_err");
  const CliRun r = run_cli({"bench", "train", "--preset", "tiny", "--lora-rank", "4", "--device", "cpu"}, dir.path);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("Llama-family --arch"), std::string::npos) << r.out;
}

TEST(BenchTrainCli, Gpt2PresetReportsStepsAndMemory) {
  ScratchDir dir("bench_train_cli_gpt2");
  const CliRun r = run_cli(
      {"bench", "train", "--preset", "tiny", "--shapes", "2x16", "--steps", "2", "--device", "cpu", "--json"}, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json out = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(out["preset"], "tiny");
  ASSERT_EQ(out["shapes"].size(), 1u);
  const nlohmann::json& s = out["shapes"][0];
  EXPECT_EQ(s["batch"], 2);
  EXPECT_EQ(s["seq"], 16);
  ASSERT_EQ(s["steps_s"].size(), 2u);
  EXPECT_NEAR(s["tokens_per_s"].get<double>(), 32 / s["step_s"].get<double>(), 1e-6 * s["tokens_per_s"].get<double>());
  EXPECT_EQ(s["device_peak_bytes"].get<int64_t>(), 0);  // the CPU's tensors live on the host heap
  EXPECT_GT(s["peak_rss_bytes"].get<int64_t>(), 0);
}
