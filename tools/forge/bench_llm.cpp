// forge bench llm --arch smollm2-135m|smollm2-360m|qwen2.5-0.5b|llama3.2-1b
//   --dtype f32|bf16|q8|q4 [--device D] [--json]: a random-initialised model
// of the real shapes (built in memory), prefill tokens/s of a 1024-token
// prompt, batch-1 decode tokens/s (greedy, KV cache, --decode-tokens after a
// 16-token prompt, as ../bench/torch_gpu_llama.py times PyTorch) and the bytes
// the weights and the KV cache take on the device.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "command.h"
#include "devices.h"
#include "forge/generate.h"
#include "forge/model.h"
#include "forge/ops.h"
#include "gpu/runtime.h"

namespace forge::cli {
namespace {

void sync(const Device& d) {
  if (d.is_webgpu()) d.runtime().sync();
}

// Best prefill time of T tokens (seconds) after a second of warm-up (a GPU
// raises its clocks only under sustained load), over at least a second and
// `reps` calls.
double prefill_seconds(const CausalLM& model, int64_t T, int reps) {
  std::vector<uint32_t> ids(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) ids[size_t(i)] = uint32_t((i * 7919) % model.vocab_size());
  Tensor t = Tensor::from_vector(ids, {1, T});
  auto once = [&] {
    KvCache cache = model.new_cache(1, T);
    sync(model.device());
    auto start = std::chrono::steady_clock::now();
    sample(model.forward_cached(t, cache)).to_vector<uint32_t>();  // ends with a read back
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (double warm = 0; warm < 1.0;) warm += once();
  double best = 1e30, timed = 0;
  for (int r = 0; r < reps || timed < 1.0; ++r) {
    const double s = once();
    timed += s;
    best = std::min(best, s);
  }
  return best;
}

void run(const std::string& device, const std::string& arch, const std::string& dtype, int64_t prefill,
         int64_t decode_tokens, bool json) {
  ModelConfig config = model_preset(arch);
  DType dense = DType::F32;
  if (dtype == "bf16") dense = DType::BF16;
  else if (dtype == "q8" || dtype == "q4") config.quantization = QuantizationConfig{64, dtype == "q8" ? 8 : 4, {}};
  else if (dtype != "f32") throw ValueError("[bench llm] --dtype must be f32, bf16, q8 or q4, got '" + dtype + "'");
  nlohmann::json results = nlohmann::json::array();
  for (const Device& d : resolve_devices(device)) {
    auto model = random_model(config, 1, d, dense);
    nlohmann::json r{{"device", d.name()}, {"arch", arch}, {"dtype", dtype}, {"weights", model->info().weights},
                     {"parameters", model->info().parameters}, {"weight_bytes", model->info().device_bytes}};
    if (prefill > 0) {
      const double s = prefill_seconds(*model, prefill, 5);
      r["prefill_tokens"] = prefill;
      r["prefill_ms"] = s * 1e3;
      r["prefill_tokens_per_s"] = double(prefill) / s;
    }
    std::vector<uint32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = uint32_t((i * 131 + 7) % size_t(model->vocab_size()));
    GenerateOptions o;
    o.max_new_tokens = decode_tokens;
    GenerateStats st;
    generate(*model, prompt, o, {}, &st);  // warm-up
    double rate = 0;
    for (int rep = 0; rep < 3; ++rep) {
      generate(*model, prompt, o, {}, &st);
      if (st.decode_s > 0) rate = std::max(rate, double(st.decode_tokens) / st.decode_s);
    }
    KvCache cache = model->new_cache(1, std::max<int64_t>(prefill, 16 + decode_tokens));
    uint64_t cache_bytes = 0;
    for (size_t l = 0; l < cache.k.size(); ++l) cache_bytes += cache.k[l].nbytes() + cache.v[l].nbytes();
    r["decode_tokens_per_s"] = rate;
    r["decode_tokens"] = st.decode_tokens;
    r["kv_cache_bytes"] = cache_bytes;
    r["device_bytes"] = model->info().device_bytes + cache_bytes;
    if (!json)
      std::printf("%-36s %s %s  prefill %lld: %8.2f ms (%8.0f tok/s)  decode %7.1f tok/s  device %.1f MB\n",
                  d.name().c_str(), arch.c_str(), dtype.c_str(), (long long)prefill, r.value("prefill_ms", 0.0),
                  r.value("prefill_tokens_per_s", 0.0), rate, double(r["device_bytes"].get<uint64_t>()) / 1e6);
    results.push_back(r);
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "llm"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench(
    {"llm", "Llama-family prefill and decode tokens/s and device memory of a random-init model", [](CLI::App& sub) {
       static std::string device = "auto", arch = "smollm2-135m", dtype = "f32";
       static int64_t prefill = 1024, decode_tokens = 128;
       static bool json = false;
       add_device_option(sub, device, true);
       sub.add_option("--arch", arch, "smollm2-135m, smollm2-360m, qwen2.5-0.5b, llama3.2-1b or tinyllama-1.1b")
           ->capture_default_str();
       sub.add_option("--dtype", dtype, "Weights: f32, bf16 (computed in f32), q8 or q4 (MLX, group 64)")
           ->capture_default_str();
       sub.add_option("--prefill", prefill, "Prompt tokens to time the prefill with (0: skip)")
           ->capture_default_str()
           ->check(CLI::NonNegativeNumber);
       sub.add_option("--decode-tokens", decode_tokens, "Tokens to decode")->capture_default_str()->check(CLI::PositiveNumber);
       sub.add_flag("--json", json, "Print JSON");
       sub.callback([] { run(device, arch, dtype, prefill, decode_tokens, json); });
     }});

}  // namespace
}  // namespace forge::cli
