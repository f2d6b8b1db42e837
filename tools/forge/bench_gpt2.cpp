// forge bench gpt2 --preset 124M [--device D] [--json]: prefill tokens/s at
// T = 256 and T = 1024 and decode tokens/s (batch 1, --decode-tokens after a
// 16-token prompt, greedy, KV cache) of a randomly initialised model built in
// memory (no files needed); --profile adds the device time by kernel of a
// decode step and of a prefill of 1024 tokens; --rows 8,32 the aggregate
// decode of that many sequences stepping together, as in bench llm.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "bench_util.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/gpt2.h"
#include "forge/ops.h"
#include "gpu/runtime.h"
#include "profile.h"

namespace forge::cli {
namespace {

void run(const std::string& device, const std::string& preset, int64_t decode_tokens, const std::vector<int64_t>& rows,
         bool json) {
  nlohmann::json results = nlohmann::json::array();
  const Gpt2Config config = gpt2_preset(preset);
  for (const Device& d : resolve_devices(device)) {
    Gpt2 model = Gpt2::random(config, 1, d);
    nlohmann::json r{{"device", d.name()}, {"preset", preset}};
    add_blas(r, d);
    for (int64_t T : {int64_t(256), int64_t(1024)}) {
      if (T > config.n_positions) continue;
      r["prefill_tokens_per_s_T" + std::to_string(T)] = double(T) / best_prefill_seconds(model, T, 5);
    }
    std::vector<uint32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = uint32_t(i * 131 + 7);
    GenerateStats st;
    const double decode_rate = best_decode_rate(model, prompt, decode_tokens, &st);
    r["decode_tokens_per_s"] = decode_rate;
    r["decode_tokens"] = st.decode_tokens;
    r["decode_wait_ms"] = decode_wait_ms(st);
    r["prompt_tokens"] = int64_t(prompt.size());
    const DecodeSplit split = decode_record_split(model, std::min<int64_t>(decode_tokens, 64));
    r["decode_record_ms"] = split.record_ms;
    r["decode_step_ms"] = split.step_ms;
    // Device time by kernel (--profile): per decode step, and per prefill of
    // the longest length.
    profile_decode_and_prefill(model, "gpt2-" + preset, std::min<int64_t>(1024, config.n_positions), r);
    add_batched_decode(model, "gpt2-" + preset, rows, decode_tokens, json, r);
    if (!json) {
      // Only the lengths that ran (a preset's context may be shorter).
      std::printf("%-36s %s ", d.name().c_str(), preset.c_str());
      for (int64_t T : {int64_t(256), int64_t(1024)})
        if (r.contains("prefill_tokens_per_s_T" + std::to_string(T)))
          std::printf(" prefill T=%lld %8.1f tok/s", (long long)T,
                      r["prefill_tokens_per_s_T" + std::to_string(T)].get<double>());
      std::printf("  decode %7.1f tok/s\n", r["decode_tokens_per_s"].get<double>());
    }
    results.push_back(r);
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "gpt2"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench({"gpt2", "GPT-2 prefill and decode tokens/s of a random-init model",
                                        [](CLI::App& sub) {
                                          static std::string device = "auto", preset = "124M";
                                          static int64_t decode_tokens = 64;
                                          static bool json = false;
                                          static std::vector<int64_t> rows;
                                          add_device_option(sub, device, true);
                                          sub.add_option("--preset", preset, "124M, 355M, 774M, 1.5B or tiny")
                                              ->capture_default_str();
                                          sub.add_option("--decode-tokens", decode_tokens, "Tokens to decode")
                                              ->capture_default_str();
                                          add_int_list_option(sub, "--rows", rows,
                                                              "Also time this many sequences decoding together "
                                                              "(comma-separated, e.g. 8,32)",
                                                              1);
                                          sub.add_flag("--json", json, "Print JSON");
                                          add_profile_flag(sub);
                                          sub.callback([] { run(device, preset, decode_tokens, rows, json); });
                                        }});

}  // namespace
}  // namespace forge::cli
