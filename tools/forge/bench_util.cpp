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

namespace {

// One --rows count of add_batched_decode. No host round trip between steps:
// the sampled ids feed the next step on the device.
nlohmann::json batched_decode(const CausalLM& model, int64_t rows, int64_t steps) {
  const Device& d = model.device();
  const bool profile = profiling(d);
  constexpr int64_t kPrompt = 16;
  KvCache cache = model.new_row_cache(rows, kPrompt + steps + 1);
  std::vector<uint32_t> prompt(kPrompt);
  std::vector<uint32_t> firsts;
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < prompt.size(); ++i)
      prompt[i] = uint32_t((size_t(r) * 7919 + i * 131 + 7) % size_t(model.vocab_size()));
    firsts.push_back(sample(model.prefill_row(Tensor::from_vector(prompt, {1, kPrompt}), cache, r)).to_vector<uint32_t>()[0]);
  }
  Tensor ids = Tensor::from_vector(firsts, {rows}, model.device());
  std::vector<int64_t> pos(static_cast<size_t>(rows), kPrompt);
  auto step = [&] {
    ids = sample(model.decode_rows(ids, cache, pos));
    for (auto& p : pos) ++p;
  };
  step();
  ids.to_vector<uint32_t>();
  if (profile) d.runtime().reset_kernel_times();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) step();
  ids.to_vector<uint32_t>();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json r{{"rows", rows}, {"step_ms", s * 1e3 / double(steps)}, {"tokens_per_s", double(rows * steps) / s}};
  if (profile) {
    r["kernels"] = kernel_table(d.runtime().kernel_times(), double(steps));
    print_profile(d, std::to_string(rows) + " rows decoding together", double(steps));
  }
  return r;
}

}  // namespace

void add_batched_decode(const CausalLM& model, const std::string& name, const std::vector<int64_t>& rows,
                        int64_t steps, bool json, nlohmann::json& r) {
  if (!rows.empty() && !model.has_row_decode())
    throw ValueError("[bench] --rows: " + name + " has no batched (per-row) decode");
  for (int64_t n : rows) {
    nlohmann::json b = batched_decode(model, n, steps);
    if (!json)
      std::printf("%-36s %s  %lld rows decoding together: %7.1f tok/s (%.2f ms a step)\n",
                  model.device().name().c_str(), name.c_str(), (long long)n, b["tokens_per_s"].get<double>(),
                  b["step_ms"].get<double>());
    r["batched_decode"].push_back(b);
  }
}

}  // namespace forge::cli
