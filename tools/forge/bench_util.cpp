#include "bench_util.h"

#include <algorithm>
#include <chrono>

#include "forge/ops.h"
#include "gpu/runtime.h"
#include "profile.h"

namespace forge::cli {

void add_blas(nlohmann::json& j, const Device& d) {
  if (d.is_cpu()) j["blas"] = Device::cpu_blas();
}

void sync(const Device& d) {
  if (d.is_webgpu()) d.runtime().sync();
}

void submit(const Device& d) {
  if (d.is_webgpu()) d.runtime().flush();
}

double best_prefill_seconds(const CausalLM& model, int64_t T, int reps) {
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

double best_decode_rate(const CausalLM& model, const std::vector<uint32_t>& prompt, int64_t tokens,
                        GenerateStats* stats) {
  GenerateOptions o;
  o.max_new_tokens = tokens;
  GenerateStats st;
  generate(model, prompt, o, {}, &st);  // warm-up
  double rate = 0;
  for (int rep = 0; rep < 3; ++rep) {
    GenerateStats run;
    generate(model, prompt, o, {}, &run);
    if (run.decode_s > 0 && double(run.decode_tokens) / run.decode_s > rate) {
      rate = double(run.decode_tokens) / run.decode_s;
      st = run;
    }
  }
  if (stats) *stats = st;
  return rate;
}

double decode_wait_ms(const GenerateStats& st) {
  return st.decode_tokens ? st.decode_wait_s * 1e3 / double(st.decode_tokens) : 0.0;
}

DecodeSplit decode_record_split(const CausalLM& model, int64_t steps) {
  KvCache cache = model.new_cache(1, steps + 2);
  Tensor id = Tensor::from_vector(std::vector<uint32_t>{1}, {1, 1}).to(model.device());
  id = sample(model.forward_cached(id, cache)).reshape({1, 1});  // compiles what the steps use
  sync(model.device());
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) id = sample(model.forward_cached(id, cache)).reshape({1, 1});
  const double recorded = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  id.to_vector<uint32_t>();
  const double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {recorded * 1e3 / double(steps), all * 1e3 / double(steps)};
}

void profile_decode_and_prefill(const CausalLM& model, const std::string& name, int64_t prefill, nlohmann::json& r) {
  const Device& d = model.device();
  if (!profiling(d)) return;
  gpu::Runtime& rt = d.runtime();
  rt.reset_kernel_times();
  constexpr int64_t kSteps = 32;
  decode_record_split(model, kSteps);
  r["decode_kernels"] = kernel_table(rt.kernel_times(), double(kSteps + 1));
  print_profile(d, name + " decode", double(kSteps + 1));
  if (prefill <= 0) return;
  rt.reset_kernel_times();
  KvCache c = model.new_cache(1, prefill);
  std::vector<uint32_t> ids(static_cast<size_t>(prefill), 1u);
  sample(model.forward_cached(Tensor::from_vector(ids, {1, prefill}), c)).to_vector<uint32_t>();
  r["prefill_kernels"] = kernel_table(rt.kernel_times(), 1.0);
  print_profile(d, name + " prefill of " + std::to_string(prefill) + " tokens");
}

}  // namespace forge::cli
