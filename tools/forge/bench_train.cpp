// forge bench train --preset 124M [--device D] [--steps N] [--shapes 4x64,...]
// [--json]: training step time (forward, backward, clipping, AdamW; one read
// back of the loss and gradient norm) and tokens/s of a randomly initialised
// GPT-2 at B4 x T64 and B8 x T1024 (or the --shapes given). A shape whose estimated memory (activations kept for the
// backward, weights, gradients, AdamW moments) exceeds what the host reports
// available is skipped and says so.
//
// forge bench train --arch smollm2-135m|smollm2-360m|...|CONFIG.json
// --shapes 4x512 [--lora-rank R]: the same for full fine-tuning of a randomly
// initialised Llama-family model (model_preset, or a config.json), or with
// --lora-rank for training a fresh LoRA adapter on q, k, v and o (the base
// frozen); with the training state's bytes, the device memory forge holds
// and the peak resident set.
#include <algorithm>
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <vector>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench_util.h"
#include "core/host_heap.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "model_arg.h"
#include "profile.h"
#include "forge/gpt2_train.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/train.h"

namespace forge::cli {
namespace {

using BatchShape = std::pair<int64_t, int64_t>;  // {B, T}

// "4x64,8x1024" -> {{4, 64}, {8, 1024}}; throws CLI::ValidationError naming
// the bad entry.
std::vector<BatchShape> parse_shapes(const std::string& text) {
  std::vector<BatchShape> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    long long b = 0, t = 0;
    char x = 0, rest = 0;
    if (std::sscanf(item.c_str(), "%lld%c%lld%c", &b, &x, &t, &rest) != 3 || x != 'x' || b < 1 || t < 1)
      throw CLI::ValidationError("--shapes", "'" + item + "' is not BxT with positive B and T (e.g. 4x64)");
    out.push_back({b, t});
  }
  if (out.empty()) throw CLI::ValidationError("--shapes", "no shape given (e.g. 4x64,8x1024)");
  return out;
}

// Bytes a step holds at its peak, roughly: per layer 16 [N, C] activations;
// weights, gradients and two moments; one layer's transient [B * nh, T, T]
// attention tiles in the backward and one LM-head block.
double step_bytes(const Gpt2Config& c, int64_t B, int64_t T) {
  const double N = double(B * T), C = double(c.n_embd), L = double(c.n_layer);
  const double att = double(B * c.n_head) * double(T) * double(T);
  const double params = double(c.vocab_size + c.n_positions) * C + L * 12 * C * C;
  return 4 * (L * 16 * N * C + 4 * params + 3 * att + 3 * 1335 * double(c.vocab_size));
}

// The device memory forge holds after the timed steps and its peak since the
// process started (zeros on the CPU), and the process's peak resident set.
void memory_fields(nlohmann::json& j, const Device& dev) {
  const Device::MemoryStats m = dev.memory_stats();
  j["device_in_use_bytes"] = m.in_use;
  j["device_peak_bytes"] = m.peak;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  j["peak_rss_bytes"] = int64_t(u.ru_maxrss) * 1024;
}

// One warm-up step (pipelines, allocations), more for at least
// kWarmupSeconds after it (a GPU's clocks rise only under load: on the H200
// the first 0.3 s of B4 x T64 steps ran at 39 to 61 ms, then 14-16 ms; the
// first step, compiling, can take a second by itself), then `steps` timed
// ones, each ending with the read back of loss and norm: mean, median and
// best step time, every step's time and tokens/s into j. With --profile, the
// timed steps' kernels go to stderr and into j.
constexpr double kWarmupSeconds = 1.0;

void time_steps(nlohmann::json& j, const Device& dev, int64_t tokens, int steps, const std::function<void()>& step) {
  step();
  int warmup = 1;
  const auto warm_start = std::chrono::steady_clock::now();
  do {
    step();
    ++warmup;
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count() < kWarmupSeconds);
  j["warmup_steps"] = warmup;
  if (profiling(dev)) dev.runtime().reset_kernel_times();
  double best = 1e30, total = 0;
  std::vector<double> each;
  for (int s = 0; s < steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, dt);
    total += dt;
    each.push_back(dt);
  }
  j["step_s"] = total / steps;
  j["best_step_s"] = best;
  // Every step's time too: a mean far above the best is a few slow steps
  // or all of them, which the list tells apart.
  j["steps_s"] = each;
  std::sort(each.begin(), each.end());
  j["median_step_s"] = each[each.size() / 2];
  j["tokens_per_s"] = double(tokens) / (total / steps);
  if (profiling(dev)) {
    j["kernels"] = kernel_table(dev.runtime().kernel_times(), double(steps));
    print_profile(dev, "a training step of " + std::to_string(tokens) + " tokens", double(steps));
  }
}

nlohmann::json bench_shape(Gpt2& model, int64_t B, int64_t T, int steps, int64_t head_rows) {
  nlohmann::json j = {{"batch", B}, {"seq", T}};
  const double need = step_bytes(model.config(), B, T), have = host_memory_available();
  if (model.device().is_cpu() && have > 0 && need > 0.9 * have) {
    char why[128];
    std::snprintf(why, sizeof why, "needs ~%.1f GB, %.1f GB available", need / 1e9, have / 1e9);
    j["skipped"] = why;
    return j;
  }
  Gpt2TrainConfig cfg;
  cfg.schedule.cosine = false;
  cfg.grad_clip = 1.0f;
  cfg.head_rows = head_rows;
  Gpt2Trainer trainer(model, cfg);
  std::vector<uint32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = uint32_t((i * 7919 + 13) % uint64_t(model.config().vocab_size));
  const Tensor t = Tensor::from_vector(ids, {B, T});
  const Gpt2MicroBatch mb{t, gpt2_shifted_targets(t)};
  time_steps(j, model.device(), B * T, steps, [&] { trainer.step({mb}); });
  memory_fields(j, model.device());
  return j;
}

// A Llama-family training step (--arch, random init): every weight trains
// with AdamW, or an attached adapter's A and B only. Memory: the training
// state (the weights as held on the device, plus gradients and two moments of
// what trains, f32), and memory_fields' (on the CPU the resident set
// includes the activations).
nlohmann::json bench_llama_shape(CausalLM& model, int64_t B, int64_t T, int steps, int64_t head_rows) {
  nlohmann::json j = {{"batch", B}, {"seq", T}};
  TrainConfig cfg;
  cfg.optimizer.schedule.cosine = false;
  cfg.optimizer.grad_clip = 1.0f;
  cfg.head_rows = head_rows;
  LlamaTrainer trainer(model, cfg);
  std::vector<uint32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = uint32_t((i * 7919 + 13) % uint64_t(model.vocab_size()));
  const Tensor t = Tensor::from_vector(ids, {B, T});
  const TrainBatch mb{t, gpt2_shifted_targets(t)};
  time_steps(j, model.device(), B * T, steps, [&] { trainer.step({mb}); });
  int64_t trained = model.info().parameters;
  if (attached_adapter(model)) {
    trained = 0;
    for (const HostTensor& w : adapter_weights(model)) trained += int64_t(w.values.size());
  }
  j["trained_parameters"] = trained;
  j["state_bytes"] = int64_t(model.info().device_bytes) + 3 * 4 * trained;
  memory_fields(j, model.device());
  return j;
}

// --arch: a preset name, or a config.json (the file or its folder).
ModelConfig arch_config(const std::string& arch) {
  if (std::filesystem::exists(arch)) return load_config(arch);
  return model_preset(arch);
}

void run_arch(const std::string& device, const std::string& arch, int64_t lora_rank, const std::string& dtype,
              int steps, const std::vector<BatchShape>& batch_shapes, int64_t head_rows, bool json) {
  const ModelConfig config = arch_config(arch);
  const DType weights = weights_dtype(dtype);
  for (const Device& dev : resolve_devices(device)) {
    auto model = random_model(config, 1, dev, weights, weights);
    if (lora_rank > 0) {
      LoraConfig lc;
      lc.rank = lora_rank;
      lc.alpha = 2.0 * double(lora_rank);
      attach_new_adapter(*model, lc, 1);
    }
    const std::string mode = (lora_rank > 0 ? "LoRA r " + std::to_string(lora_rank) : "full") + ", " + dtype;
    nlohmann::json shapes = nlohmann::json::array();
    for (auto [B, T] : batch_shapes) {
      nlohmann::json j = bench_llama_shape(*model, B, std::min(T, model->context_length()), steps, head_rows);
      if (!json) {
        std::printf("train %s (%s) B%lld x T%lld on %s: %.3f s/step, %.0f tokens/s, state %.2f GB, device peak %.2f GB\n",
                    arch.c_str(), mode.c_str(), (long long)B, (long long)T, dev.name().c_str(),
                    j["step_s"].get<double>(), j["tokens_per_s"].get<double>(), j["state_bytes"].get<double>() / 1e9,
                    j["device_peak_bytes"].get<double>() / 1e9);
        std::fflush(stdout);
      }
      shapes.push_back(j);
    }
    if (json) {
      nlohmann::json out{{"bench", "train"}, {"arch", arch}, {"device", dev.name()},
                         {"training", lora_rank > 0 ? "lora" : "full"}, {"lora_rank", lora_rank}, {"dtype", dtype},
                         {"parameters", model->info().parameters}, {"steps", steps}, {"head_rows", head_rows},
                         {"shapes", shapes}};
      add_blas(out, dev);
      std::printf("%s\n", out.dump().c_str());
    }
  }
}

void run(const std::string& device, const std::string& preset, int steps, const std::vector<BatchShape>& batch_shapes,
         int64_t head_rows, bool json) {
  for (const Device& dev : resolve_devices(device)) {
    Gpt2 model = Gpt2::random(gpt2_preset(preset), 1, dev);
    nlohmann::json shapes = nlohmann::json::array();
    for (auto [B, T] : batch_shapes) {
      nlohmann::json j = bench_shape(model, B, std::min(T, model.config().n_positions), steps, head_rows);
      if (!json) {
        if (j.contains("skipped"))
          std::printf("train %s B%lld x T%lld on %s: skipped (%s)\n", preset.c_str(), (long long)B, (long long)T,
                      dev.name().c_str(), j["skipped"].get<std::string>().c_str());
        else
          std::printf("train %s B%lld x T%lld on %s: %.3f s/step, %.0f tokens/s, device peak %.2f GB\n", preset.c_str(),
                      (long long)B, (long long)T, dev.name().c_str(), j["step_s"].get<double>(),
                      j["tokens_per_s"].get<double>(), j["device_peak_bytes"].get<double>() / 1e9);
        std::fflush(stdout);
      }
      shapes.push_back(j);
    }
    if (json) {
      nlohmann::json out{{"bench", "train"}, {"preset", preset},      {"device", dev.name()},
                         {"steps", steps},   {"head_rows", head_rows}, {"shapes", shapes}};
      add_blas(out, dev);
      std::printf("%s\n", out.dump().c_str());
    }
  }
}

const bool registered = register_bench(
    {"train", "Training step time and tokens/s: GPT-2 at B4xT64 and B8xT1024, or a Llama-family --arch (full or LoRA)", [](CLI::App& sub) {
       static std::string device = "auto", preset = "124M", shapes = "4x64,8x1024", arch, dtype = "f32";
       static int steps = 2;
       static int64_t lora_rank = 0, head_rows = 0;
       static bool json = false;
       sub.add_option("--preset", preset, "GPT-2 size (124M, 355M, 774M, 1.5B, tiny)");
       sub.add_option("--arch", arch,
                      "A Llama-family model of this preset (smollm2-135m, smollm2-360m, ...) or config.json instead");
       check_at_least(
           sub.add_option("--lora-rank", lora_rank, "With --arch: train a fresh LoRA adapter of this rank on q, k, v, o"),
           1);
       add_dtype_option(sub, dtype)
           ->description("With --arch and --lora-rank: the frozen base's dense weights on the device, f32 or bf16");
       check_at_least(sub.add_option("--steps", steps, "Timed steps per shape (after one warm-up)"), 1);
       sub.add_option("--shapes", shapes, "Comma-separated BxT shapes (T capped at the context length)")
           ->capture_default_str();
       check_at_least(sub.add_option("--head-rows", head_rows,
                                     "Positions per LM-head block, rounded up to a multiple of 64 (default: as many "
                                     "as 2 GiB of logits hold on a GPU, 256 MiB on the CPU): fewer take less "
                                     "memory"),
                      1);
       add_device_option(sub, device, true);
       add_profile_flag(sub);
       sub.add_flag("--json", json, "Print JSON");
       sub.callback([] {
         if (dtype != "f32" && (arch.empty() || lora_rank == 0))
           throw CLI::ValidationError("--dtype", dtype + " weights are a frozen LoRA base: pass --arch and --lora-rank");
         if (!arch.empty())
           return run_arch(device, arch, lora_rank, dtype, steps, parse_shapes(shapes), head_rows, json);
         if (lora_rank > 0) throw CLI::ValidationError("--lora-rank", "LoRA is benchmarked on a Llama-family --arch");
         run(device, preset, steps, parse_shapes(shapes), head_rows, json);
       });
     }});

}  // namespace
}  // namespace forge::cli
