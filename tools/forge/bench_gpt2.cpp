// forge bench gpt2 --preset 124M [--device D] [--json]: prefill tokens/s at
// T = 256 and T = 1024 and decode tokens/s (batch 1, --decode-tokens after a
// 16-token prompt, greedy, KV cache) of a randomly initialised model built in
// memory (no files needed).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "command.h"
#include "devices.h"
#include "forge/gpt2.h"
#include "forge/ops.h"
#include "gpu/runtime.h"

namespace forge::cli {
namespace {

void sync(const Device& d) {
  if (d.is_webgpu()) d.runtime().sync();
}

// Prefill tokens/s at length T: warm-up calls for at least a second (a GPU
// raises its clocks only under sustained load, and an idle one drops them
// again), then the best of the timed calls made over at least another
// second, `reps` calls at the least.
double prefill_rate(const Gpt2& model, int64_t T, int reps) {
  std::vector<uint32_t> ids(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) ids[size_t(i)] = uint32_t((i * 7919) % model.config().vocab_size);
  Tensor t = Tensor::from_vector(ids, {1, T});
  auto once = [&] {
    Gpt2Cache cache = model.new_cache(1);
    sync(model.device());
    auto start = std::chrono::steady_clock::now();
    sample(model.forward_cached(t, cache)).to_vector<uint32_t>();  // ends with a read back
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (double warm = 0; warm < 1.0;) warm += once();
  double best = 0, timed = 0;
  for (int r = 0; r < reps || timed < 1.0; ++r) {
    const double s = once();
    timed += s;
    best = std::max(best, double(T) / s);
  }
  return best;
}

void run(const std::string& device, const std::string& preset, int64_t decode_tokens, bool json) {
  nlohmann::json results = nlohmann::json::array();
  const Gpt2Config config = gpt2_preset(preset);
  for (const Device& d : resolve_devices(device)) {
    Gpt2 model = Gpt2::random(config, 1, d);
    nlohmann::json r{{"device", d.name()}, {"preset", preset}};
    for (int64_t T : {int64_t(256), int64_t(1024)}) {
      if (T > config.n_positions) continue;
      r["prefill_tokens_per_s_T" + std::to_string(T)] = prefill_rate(model, T, 5);
    }
    std::vector<uint32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = uint32_t(i * 131 + 7);
    Gpt2GenerateOptions o;
    o.max_new_tokens = decode_tokens;
    Gpt2GenerateStats st;
    // One warm-up generation, then the best of three.
    gpt2_generate(model, prompt, o, {}, &st);
    double decode_rate = 0;
    for (int rep = 0; rep < 3; ++rep) {
      gpt2_generate(model, prompt, o, {}, &st);
      if (st.decode_s > 0) decode_rate = std::max(decode_rate, double(st.decode_tokens) / st.decode_s);
    }
    r["decode_tokens_per_s"] = decode_rate;
    r["decode_tokens"] = st.decode_tokens;
    r["prompt_tokens"] = int64_t(prompt.size());
    if (!json)
      std::printf("%-36s %s  prefill T=256 %8.1f tok/s  T=1024 %8.1f tok/s  decode %7.1f tok/s\n",
                  d.name().c_str(), preset.c_str(), r.value("prefill_tokens_per_s_T256", 0.0),
                  r.value("prefill_tokens_per_s_T1024", 0.0), r["decode_tokens_per_s"].get<double>());
    results.push_back(r);
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "gpt2"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench({"gpt2", "GPT-2 prefill and decode tokens/s of a random-init model",
                                        [](CLI::App& sub) {
                                          static std::string device = "auto", preset = "124M";
                                          static int64_t decode_tokens = 64;
                                          static bool json = false;
                                          add_device_option(sub, device, true);
                                          sub.add_option("--preset", preset, "124M, 355M, 774M, 1.5B or tiny")
                                              ->capture_default_str();
                                          sub.add_option("--decode-tokens", decode_tokens, "Tokens to decode")
                                              ->capture_default_str();
                                          sub.add_flag("--json", json, "Print JSON");
                                          sub.callback([] { run(device, preset, decode_tokens, json); });
                                        }});

}  // namespace
}  // namespace forge::cli
