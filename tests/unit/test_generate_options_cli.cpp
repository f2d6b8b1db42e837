// forge generate's --min-p, --repeat-penalty / --repeat-last-n and
// --context-shift through the command line, against references computed here
// with the library: greedy ids of a host loop that applies the penalty by hand,
// and the continuation of the window a context shift leaves.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "forge/model.h"
#include "forge/ops.h"
#include "unit/cli_shell.h"
#include "unit/this_build.h"

namespace {

const std::string kData = forge::testing::test_data_dir();

using forge::testing::CliResult;
using forge::testing::last_json_line;
using forge::testing::run_forge;

std::string id_list(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t x : ids) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The new ids of `forge generate ... --json`; fails the test on a non-zero exit.
std::vector<uint32_t> generated(const std::string& args) {
  CliResult r = run_forge("generate " + args + " --json", false);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  if (r.code != 0) return {};
  return last_json_line(r.out)["ids"].get<std::vector<uint32_t>>();
}

// Greedy ids of a plain host loop: the whole sequence through forward, the
// last row read back, each id among the last `window` ids of the sequence
// penalised once (z > 0 times f32(1 / r), z < 0 times r), then the argmax
// (the lowest index on ties).
std::vector<uint32_t> penalised_greedy_reference(const forge::CausalLM& model, std::vector<uint32_t> seq, int64_t n,
                                                 float penalty, int64_t window) {
  const int64_t V = model.vocab_size();
  const float down = float(1.0 / double(penalty));
  std::vector<uint32_t> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t T = int64_t(seq.size());
    std::vector<float> all = model.forward(forge::Tensor::from_vector(seq, {1, T})).to_vector<float>();
    std::vector<float> z(all.end() - V, all.end());
    std::vector<bool> seen(size_t(V), false);
    for (int64_t p = std::max<int64_t>(0, T - window); p < T; ++p) seen[seq[size_t(p)]] = true;
    for (int64_t v = 0; v < V; ++v)
      if (seen[size_t(v)]) z[size_t(v)] = z[size_t(v)] > 0 ? z[size_t(v)] * down : z[size_t(v)] * penalty;
    const uint32_t id = uint32_t(std::max_element(z.begin(), z.end()) - z.begin());
    out.push_back(id);
    seq.push_back(id);
  }
  return out;
}

}  // namespace

TEST(GenerateOptionsCli, MinPOneIsGreedyOnBothBackends) {
  // min-p 1 keeps only the most likely token, so a sampling run with any seed
  // gives the greedy ids. (WebGPU, SwiftShader here, on the GPT-2 fixture only:
  // a decode step takes about half a second there.)
  for (const char* fx : {"gpt2-tiny", "llama-tiny"}) {
    const std::string base = "--model " + kData + "/" + fx + " --prompt-ids 5,17,300,2 -n 8 ";
    const std::vector<uint32_t> greedy = generated(base + "--greedy --device cpu");
    ASSERT_EQ(greedy.size(), 8u) << fx;
    EXPECT_EQ(generated(base + "--min-p 1 --temperature 1.5 --seed 9 --device cpu"), greedy) << fx;
    EXPECT_NE(generated(base + "--temperature 1.5 --seed 9 --device cpu"), greedy) << fx << ": without min-p it samples";
    if (!forge::testing::webgpu_built() || std::string(fx) != "gpt2-tiny") continue;
    EXPECT_EQ(generated(base + "--min-p 1 --seed 4 --device webgpu"), greedy) << fx;
    // A loose min-p samples, the same ids on both backends for one seed.
    const std::string loose = base + "--min-p 0.05 --seed 21 --device ";
    EXPECT_EQ(generated(loose + "cpu"), generated(loose + "webgpu")) << fx;
  }
}

TEST(GenerateOptionsCli, RepeatPenaltyMatchesAHostReference) {
  // Greedy with --repeat-penalty 1.5 over the last 6 ids (prompt included),
  // with the KV cache (the window a ring on the device) and without, equals
  // the host loop; the penalty changes what plain greedy gives.
  const std::vector<uint32_t> prompt = {5, 17, 300, 2, 5};
  for (const char* fx : {"gpt2-tiny", "llama-tiny"}) {
    const std::string dir = kData + "/" + fx;
    auto model = forge::load_model(dir, forge::Device::cpu());
    const std::vector<uint32_t> want = penalised_greedy_reference(*model, prompt, 16, 1.5f, 6);
    const std::string base = "--model " + dir + " --prompt-ids " + id_list(prompt) + " -n 16 --greedy ";
    const std::string pen = base + "--repeat-penalty 1.5 --repeat-last-n 6 ";
    EXPECT_EQ(generated(pen + "--device cpu"), want) << fx;
    EXPECT_EQ(generated(pen + "--device cpu --no-cache"), want) << fx;
    if (forge::testing::webgpu_built() && std::string(fx) == "gpt2-tiny")
      EXPECT_EQ(generated(pen + "--device webgpu"), want) << fx;
    EXPECT_NE(generated(base + "--device cpu"), want) << fx << ": the penalty should change the greedy ids";
    // --repeat-penalty 1 is off.
    EXPECT_EQ(generated(base + "--repeat-penalty 1 --device cpu"), generated(base + "--device cpu")) << fx;
  }
}

TEST(GenerateOptionsCli, RangesAreUsageErrors) {
  const std::string base = "generate --model " + kData + "/gpt2-tiny --prompt-ids 1,2 -n 2 --device cpu ";
  for (const std::string bad : {"--min-p 1.5", "--min-p -0.1", "--min-p nan", "--repeat-penalty 0",
                                "--repeat-penalty -1", "--repeat-penalty inf", "--repeat-penalty nan",
                                "--repeat-last-n -2", "--keep 2", "--context-shift --no-cache", "--keep -1 --context-shift"}) {
    CliResult r = run_forge(base + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("forge: error: ", 0), 0u) << bad << "\n" << r.out;
  }
  CliResult r = run_forge(base + "--min-p 2");
  EXPECT_NE(r.out.find("--min-p must be in [0, 1], got 2"), std::string::npos) << r.out;
  r = run_forge(base + "--repeat-penalty 0");
  EXPECT_NE(r.out.find("--repeat-penalty must be finite and > 0, got 0"), std::string::npos) << r.out;
  // chat takes the same sampling flags.
  r = run_forge("help chat");
  for (const char* flag : {"--min-p", "--repeat-penalty", "--repeat-last-n"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag << "\n" << r.out;
}

TEST(GenerateOptionsCli, ContextShiftGeneratesPastTheContext) {
  // gpt2-tiny (learned positions) and llama-tiny (rope) with a prompt of P
  // ids: without the flag generation stops at the context with a notice; with
  // it the requested count comes out, the ids before the first shift are the
  // unshifted ones, and the ids after it continue the window the shift keeps
  // (the first `keep` ids, then all but the oldest half of the rest), as a
  // fresh generate from that window gives them.
  struct Case {
    const char* fx;
    int64_t ctx, prompt, keep, n;
  };
  for (const Case& c : {Case{"gpt2-tiny", 64, 50, 0, 40}, Case{"llama-tiny", 256, 240, 2, 40}}) {
    std::vector<uint32_t> prompt;
    for (int64_t i = 0; i < c.prompt; ++i) prompt.push_back(uint32_t((i * 37 + 5) % 1000));
    const int64_t P = c.prompt;
    const std::string base = "--model " + kData + "/" + c.fx + " --prompt-ids " + id_list(prompt) + " --greedy ";
    CliResult stop = run_forge("generate " + base + "-n " + std::to_string(c.n) + " --device cpu --json");
    ASSERT_EQ(stop.code, 0) << stop.out;
    EXPECT_NE(stop.out.find("stopped at the context length " + std::to_string(c.ctx)), std::string::npos) << stop.out;
    const std::vector<uint32_t> unshifted = last_json_line(stop.out)["ids"].get<std::vector<uint32_t>>();
    ASSERT_EQ(int64_t(unshifted.size()), c.ctx - P) << c.fx;

    const std::string shift = base + "-n " + std::to_string(c.n) + " --context-shift --keep " + std::to_string(c.keep);
    CliResult r = run_forge("generate " + shift + " --device cpu --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find("stopped at the context"), std::string::npos) << r.out;
    const nlohmann::json j = last_json_line(r.out);
    EXPECT_EQ(j["stop_reason"], "length") << c.fx;
    const std::vector<uint32_t> ids = j["ids"].get<std::vector<uint32_t>>();
    ASSERT_EQ(int64_t(ids.size()), c.n) << c.fx;
    EXPECT_TRUE(std::equal(unshifted.begin(), unshifted.end(), ids.begin())) << c.fx;

    // The first shift comes when the cache holds ctx ids (prompt + ids[0 .. ctx - P))
    // and ids[ctx - P] is to be fed: keep + the newest ctx - keep - drop of them, then it.
    std::vector<uint32_t> all = prompt;
    all.insert(all.end(), ids.begin(), ids.end());
    const int64_t drop = (c.ctx - c.keep) / 2;
    std::vector<uint32_t> window(all.begin(), all.begin() + c.keep);
    window.insert(window.end(), all.begin() + c.keep + drop, all.begin() + c.ctx + 1);
    const int64_t m = std::min<int64_t>(c.n - (c.ctx - P + 1), c.ctx - int64_t(window.size()));
    ASSERT_GE(m, 8) << "the case should check several ids after the shift";
    const std::vector<uint32_t> cont =
        generated("--model " + kData + "/" + c.fx + " --prompt-ids " + id_list(window) + " --greedy -n " +
                  std::to_string(m) + " --device cpu");
    ASSERT_EQ(int64_t(cont.size()), m) << c.fx;
    EXPECT_TRUE(std::equal(cont.begin(), cont.end(), ids.begin() + (c.ctx - P + 1))) << c.fx;
  }
  // WebGPU shifts alike (a short run: SwiftShader decodes about two ids a second).
  std::vector<uint32_t> prompt;
  for (int64_t i = 0; i < 60; ++i) prompt.push_back(uint32_t((i * 37 + 5) % 1000));
  const std::string shift = "--model " + kData + "/gpt2-tiny --prompt-ids " + id_list(prompt) +
                            " --greedy -n 8 --context-shift --keep 1 --device ";
  const std::vector<uint32_t> cpu = generated(shift + "cpu");
  EXPECT_EQ(cpu.size(), 8u);
  if (forge::testing::webgpu_built()) EXPECT_EQ(generated(shift + "webgpu"), cpu);
}
