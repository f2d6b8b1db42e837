// `--profile`: generate, train and the benchmarks print a table of kernel
// time to stderr, by the device's timestamp queries or (FORGE_PROFILE=host,
// and on devices without them) by the host clock; on the CPU they say there
// is nothing to time. The table's dispatch counts must add up to what the
// header says, and the work's kernels must be in it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "unit/cli_process.h"
#include "unit/this_build.h"

namespace {

namespace fs = std::filesystem;
using forge::testing::CliOptions;
using forge::testing::lines_of;
using forge::testing::run_cli;
using forge::testing::ScratchDir;

const std::string kGpt2 = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";

struct Table {
  std::string header;
  double dispatches = 0;            // from the header
  double summed = 0;                // the rows' dispatch column
  std::vector<std::string> kernels; // the rows' kernel column
};

// The first kernel table in `out`.
Table parse_table(const std::string& out) {
  Table t;
  const std::vector<std::string> lines = lines_of(out);
  static const std::regex header(R"(forge: kernel profile of .* ms in ([0-9.]+) dispatches)");
  static const std::regex row(R"(^\s*([0-9.]+)\s+([0-9.]+)%\s+([0-9.]+)\s+([0-9.]+)\s+(\S+)\s+(\S+)\s*$)");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, header)) continue;
    t.header = lines[i];
    t.dispatches = std::stod(m[1]);
    for (size_t j = i + 2; j < lines.size() && std::regex_match(lines[j], m, row); ++j) {
      t.summed += std::stod(m[3]);
      t.kernels.push_back(m[6]);
    }
    break;
  }
  return t;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// `generate --profile` on WebGPU with `env`; its table, checked to be there
// and to add up to its header's dispatches. Six prompt ids: a prefill past
// the fused decode step's rows keeps its norms.
using Env = std::vector<std::pair<std::string, std::string>>;
Table profiled_generate(const ScratchDir& dir, const Env& env) {
  CliOptions o;
  o.env = env;
  const auto r = run_cli({"generate", "-m", kGpt2, "--prompt-ids", "1,2,3,4,5,6", "-n", "5", "--greedy", "--json",
                          "--device", "webgpu", "--profile"},
                         dir.path, o);
  EXPECT_EQ(r.code, 0) << r.out;
  const Table t = parse_table(r.out);
  EXPECT_FALSE(t.header.empty()) << r.out;
  EXPECT_GT(t.dispatches, 10) << t.header;
  EXPECT_NEAR(t.summed, t.dispatches, 0.5) << r.out;
  return t;
}

TEST(ProfileCli, GenerateOnWebGpuPrintsAKernelTableByEitherClock) {
  ScratchDir dir("profile_generate");
  for (const char* clock : {"", "host"}) {
    const Table t = profiled_generate(dir, *clock ? Env{{"FORGE_PROFILE", clock}} : Env{});
    EXPECT_NE(t.header.find(*clock ? "(host clock)" : "("), std::string::npos) << t.header;
    EXPECT_TRUE(has(t.kernels, "layernorm")) << t.header;   // GPT-2's prefill norms
    EXPECT_TRUE(has(t.kernels, "qkv_append")) << t.header;  // its decode steps
    // Greedy picks on the device: a CPU driver's serial scan, a GPU's workgroups.
    EXPECT_TRUE(has(t.kernels, "sample_greedy") || has(t.kernels, "sample")) << t.header;
  }
}

// FORGE_PROFILE_GRID=1: a row per kernel and grid of workgroups (a matmul's
// shapes apart), the rows still adding up to the header's dispatches.
TEST(ProfileCli, GridSplitOnWebGpuGivesEachKernelAndGridItsOwnRow) {
  ScratchDir dir("profile_grid");
  const Table t = profiled_generate(dir, {{"FORGE_PROFILE_GRID", "1"}});
  ASSERT_FALSE(t.kernels.empty()) << t.header;
  static const std::regex gridded(R"(^[a-z0-9_]+@[0-9]+x[0-9]+x[0-9]+$)");
  for (const std::string& k : t.kernels) EXPECT_TRUE(std::regex_match(k, gridded)) << k;
  // GPT-2's prefill norms, under their grid.
  EXPECT_TRUE(std::any_of(t.kernels.begin(), t.kernels.end(),
                          [](const std::string& k) { return k.rfind("layernorm@", 0) == 0; }))
      << t.header;
}

TEST(ProfileCli, TrainFixedBatchOnWebGpuTablesAStepAndTheCpuSaysSo) {
  ScratchDir dir("profile_train");
  const std::string ids = kGpt2 + "/reference.safetensors";  // holds input_ids
  ASSERT_TRUE(fs::exists(ids)) << ids;
  const auto r = run_cli({"train", "-m", kGpt2, "--fixed-batch", ids, "--steps", "2", "--lr", "1e-3", "--json",
                          "--device", "webgpu", "--profile"},
                         dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const Table t = parse_table(r.out);
  ASSERT_FALSE(t.header.empty()) << r.out;
  EXPECT_NE(t.header.find("2 training steps"), std::string::npos) << t.header;
  EXPECT_NE(t.header.find("a step"), std::string::npos) << t.header;
  EXPECT_NEAR(t.summed, t.dispatches, 0.5) << r.out;
  EXPECT_TRUE(has(t.kernels, "layernorm_bwd")) << r.out;  // the backward ran and was timed

  const auto cpu = run_cli({"train", "-m", kGpt2, "--fixed-batch", ids, "--steps", "1", "--lr", "1e-3", "--json",
                            "--device", "cpu", "--profile"},
                           dir.path);
  ASSERT_EQ(cpu.code, 0) << cpu.out;
  EXPECT_NE(cpu.out.find("ran on the CPU, so there is no kernel table"), std::string::npos) << cpu.out;
  EXPECT_TRUE(parse_table(cpu.out).header.empty()) << cpu.out;
}

// bench gpt2 --profile: a table of a decode step and one of a prefill (the
// preset's whole context, 128 tokens for tiny), and the same rows in the
// JSON.
TEST(ProfileCli, BenchGpt2OnWebGpuTablesADecodeStepAndAPrefill) {
  ScratchDir dir("profile_bench_gpt2");
  const auto r = run_cli({"bench", "gpt2", "--preset", "tiny", "--decode-tokens", "4", "--rows", "2", "--device",
                          "webgpu", "--profile", "--json"},
                         dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const Table decode = parse_table(r.out);
  EXPECT_NE(decode.header.find("gpt2-tiny decode"), std::string::npos) << decode.header;
  EXPECT_NEAR(decode.summed, decode.dispatches, 0.5) << r.out;
  EXPECT_TRUE(has(decode.kernels, "sample_greedy")) << r.out;
  const size_t prefill_at = r.out.find("gpt2-tiny prefill of 128 tokens");
  ASSERT_NE(prefill_at, std::string::npos) << r.out;
  const Table prefill = parse_table(r.out.substr(r.out.rfind('\n', prefill_at)));
  EXPECT_NEAR(prefill.summed, prefill.dispatches, 0.5) << r.out;
  EXPECT_TRUE(has(prefill.kernels, "layernorm")) << r.out;
  const size_t json_at = r.out.find("{\n  \"bench\"");
  ASSERT_NE(json_at, std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(json_at, r.out.rfind('}') + 1 - json_at));
  const nlohmann::json& res = j["results"][0];
  EXPECT_FALSE(res["decode_kernels"].empty()) << res.dump();
  EXPECT_FALSE(res["prefill_kernels"].empty()) << res.dump();
  // --rows: two sequences stepping together, each row's keys and values
  // appended by the one fused dispatch a layer.
  const size_t rows_at = r.out.find("2 rows decoding together");
  ASSERT_NE(rows_at, std::string::npos) << r.out;
  const Table rows = parse_table(r.out.substr(r.out.rfind('\n', rows_at)));
  EXPECT_TRUE(has(rows.kernels, "qkv_append")) << r.out;
  EXPECT_FALSE(has(rows.kernels, "scatter_add")) << r.out;
  ASSERT_EQ(res["batched_decode"].size(), 1u) << res.dump();
  EXPECT_EQ(res["batched_decode"][0]["rows"], 2) << res.dump();
  EXPECT_GT(res["batched_decode"][0]["tokens_per_s"].get<double>(), 0.0) << res.dump();
  EXPECT_FALSE(res["batched_decode"][0]["kernels"].empty()) << res.dump();
}

}  // namespace
