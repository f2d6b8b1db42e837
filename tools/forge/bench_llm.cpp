// forge bench llm --arch smollm2-135m|smollm2-360m|qwen2.5-0.5b|llama3.2-1b
//   --dtype f32|bf16|q8|q4 [--device D] [--json]: a random-initialised model
// of the real shapes (built in memory), prefill tokens/s of a 1024-token
// prompt, batch-1 decode tokens/s (greedy, KV cache, --decode-tokens after a
// 16-token prompt, as ../bench/torch_gpu_llama.py times PyTorch) and the bytes
// the weights and the KV cache take on the device. With $FORGE_PROFILE=1 on a
// GPU with timestamp queries, also the device time of each kernel per decode
// step and per prefill. --rows 8,32 adds the aggregate decode tokens/s of
// that many sequences stepping together (decode_rows, as forge serve's
// continuous batching runs them), with its kernels when profiling.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "bench_util.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/generate.h"
#include "forge/model.h"
#include "forge/ops.h"
#include "gpu/runtime.h"
#include "model_arg.h"
#include "profile.h"

namespace forge::cli {
namespace {

void run(const std::string& device, const std::string& model_dir, const std::string& arch, const std::string& dtype,
         int64_t prefill, int64_t decode_tokens, const std::vector<int64_t>& batch_rows, bool json) {
  ModelConfig config = model_preset(arch);
  // bf16: a bf16 checkpoint whose Linear weights stay bf16 on the device.
  DType dense = DType::F32;
  if (dtype == "bf16") dense = DType::BF16;
  else if (dtype == "q8" || dtype == "q4") config.quantization = QuantizationConfig{64, dtype == "q8" ? 8 : 4, {}};
  else if (dtype != "f32") throw ValueError("[bench llm] --dtype must be f32, bf16, q8 or q4, got '" + dtype + "'");
  if (!model_dir.empty() && config.quantization)
    throw ValueError("[bench llm] --dtype " + dtype + " is for random weights; quantize a model folder with forge "
                     "quantize (with --model, --dtype is f32 or bf16)");
  nlohmann::json results = nlohmann::json::array();
  for (const Device& d : resolve_devices(device)) {
    // A model folder as it is, or random weights of the preset's shapes.
    auto model = model_dir.empty() ? random_model(config, 1, d, dense, dense) : load_model(model_folder(model_dir), d, dense);
    const std::string name = model_dir.empty() ? arch : model_dir;
    if (!batch_rows.empty() && !model->has_row_decode())  // before the minutes of the other timings
      throw ValueError("[bench llm] --rows: " + name + " has no batched (per-row) decode");
    prefill = std::min(prefill, model->context_length() - 1);
    nlohmann::json r{{"device", d.name()}, {"arch", name}, {"dtype", dtype},
                     {"weights", model->info().weights},
                     {"parameters", model->info().parameters}, {"weight_bytes", model->info().device_bytes}};
    add_blas(r, d);
    if (prefill > 0) {
      const double s = best_prefill_seconds(*model, prefill, 5);
      r["prefill_tokens"] = prefill;
      r["prefill_ms"] = s * 1e3;
      r["prefill_tokens_per_s"] = double(prefill) / s;
    }
    std::vector<uint32_t> prompt(16);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = uint32_t((i * 131 + 7) % size_t(model->vocab_size()));
    GenerateStats st;
    const double rate = best_decode_rate(*model, prompt, decode_tokens, &st);
    KvCache cache = model->new_cache(1, std::max<int64_t>(prefill, 16 + decode_tokens));
    uint64_t cache_bytes = 0;
    for (size_t l = 0; l < cache.k.size(); ++l) cache_bytes += cache.k[l].nbytes() + cache.v[l].nbytes();
    const DecodeSplit split = decode_record_split(*model, std::min<int64_t>(decode_tokens, 64));
    r["decode_record_ms"] = split.record_ms;
    r["decode_step_ms"] = split.step_ms;
    r["decode_tokens_per_s"] = rate;
    r["decode_wait_ms"] = decode_wait_ms(st);
    // Device time by kernel (--profile): per decode step, and per prefill.
    profile_decode_and_prefill(*model, name, prefill, r);
    add_batched_decode(*model, name, batch_rows, decode_tokens, json, r);
    r["decode_tokens"] = st.decode_tokens;
    r["kv_cache_bytes"] = cache_bytes;
    r["device_bytes"] = model->info().device_bytes + cache_bytes;
    if (!json)
      std::printf("%-36s %s %s  prefill %lld: %8.2f ms (%8.0f tok/s)  decode %7.1f tok/s  device %.1f MB\n",
                  d.name().c_str(), name.c_str(), model->info().weights.c_str(), (long long)prefill, r.value("prefill_ms", 0.0),
                  r.value("prefill_tokens_per_s", 0.0), rate, double(r["device_bytes"].get<uint64_t>()) / 1e6);
    results.push_back(r);
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "llm"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench(
    {"llm", "Llama-family prefill and decode tokens/s and device memory of a random-init model", [](CLI::App& sub) {
       static std::string device = "auto", model, arch = "smollm2-135m", dtype = "f32";
       static int64_t prefill = 1024, decode_tokens = 128;
       static bool json = false;
       static std::vector<int64_t> rows;
       add_device_option(sub, device, true);
       sub.add_option("-m,--model", model, "Time this model folder (or Hugging Face id) instead of --arch/--dtype");
       sub.add_option("--arch", arch, "smollm2-135m, smollm2-360m, qwen2.5-0.5b, llama3.2-1b or tinyllama-1.1b")
           ->capture_default_str();
       sub.add_option("--dtype", dtype, "Weights: f32, bf16 (kept bf16 on the device, computed in f32), q8 or q4 (MLX, group 64; random weights only)")
           ->capture_default_str()
           ->check(CLI::IsMember({"f32", "bf16", "q8", "q4"}));
       check_at_least(sub.add_option("--prefill", prefill, "Prompt tokens to time the prefill with (0: skip)")
                          ->capture_default_str(),
                      0);
       check_at_least(sub.add_option("--decode-tokens", decode_tokens, "Tokens to decode")->capture_default_str(), 1);
       add_int_list_option(sub, "--rows", rows,
                           "Also time this many sequences decoding together (comma-separated, e.g. 8,32)", 1);
       sub.add_flag("--json", json, "Print JSON");
       add_profile_flag(sub);
       sub.callback([] { run(device, model, arch, dtype, prefill, decode_tokens, rows, json); });
     }});

}  // namespace
}  // namespace forge::cli
