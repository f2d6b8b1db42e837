// forge bench ops [--device cpu|webgpu|all] [--size small|large|all] [--op NAME...] [--min-time S] [--json]
// Throughput of the ops at GPT-2 124M shapes (C = 768, 12 heads, V = 50257):
// "small" is B = 4, T = 64 and "large" B = 8, T = 1024 (rows B*T). Matmuls
// report GFLOP/s (2 m n k), memory-bound ops GB/s (bytes read + written once).
// Each op runs twice to warm up (pipelines, buffer pools), then in batches
// of ten calls for at least --min-time seconds (time_per_call).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "command.h"
#include "forge/error.h"
#include "forge/ops.h"
#include "gpu/runtime.h"

namespace forge::cli {
namespace {

constexpr int64_t kC = 768, kHeads = 12, kVocab = 50257;
constexpr int64_t kGpt2Params = 124439808;  // GPT-2 124M, tied embeddings

struct BenchArgs {
  std::string device = "all";
  std::string size = "all";
  std::vector<std::string> ops;  // empty: all
  double min_time = 0.5;
  bool json = false;
};

struct Config {
  const char* name;
  int64_t batch, seq;
};

// One measured op: the work of one call and how to run it.
struct Case {
  std::string op;
  std::string shape;
  double flops = 0;  // per call, matmuls
  double bytes = 0;  // per call, memory-bound ops
  std::function<void()> run;
};

// Cheap deterministic values in [-1, 1): filling 124M floats with a
// distribution object would dominate the set-up time.
Tensor filled(const Shape& shape, uint32_t seed, const Device& device) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x = float(int32_t(s)) * (1.0f / 2147483648.0f);
  }
  return Tensor::from_vector(v, shape, device);
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string s = "[";
  for (int64_t v : d) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
  return s + "]";
}

// Milliseconds per call.
double time_case(const Case& c, const Device& d, double min_time) {
  return time_per_call(d, [&] { c.run(); }, 1, min_time) * 1e3;
}

bool wanted(const BenchArgs& a, const std::string& op) {
  return a.ops.empty() || std::find(a.ops.begin(), a.ops.end(), op) != a.ops.end();
}

// Runs the cases of one config (built lazily so that only wanted inputs are
// allocated) and appends results.
void bench_config(const BenchArgs& a, const Config& cfg, const Device& d, nlohmann::json& out) {
  const int64_t bt = cfg.batch * cfg.seq, c = kC, c4 = 4 * kC;
  auto matmul_case = [&](const std::string& op, int64_t m, int64_t k, int64_t n, bool tb) {
    Case cs{op, dims({m, k}) + " x " + (tb ? dims({n, k}) + "^T" : dims({k, n})), 2.0 * m * n * k, 0, {}};
    if (!wanted(a, op)) return cs;
    auto x = std::make_shared<Tensor>(filled({m, k}, 1, d));
    auto w = std::make_shared<Tensor>(filled(tb ? Shape{n, k} : Shape{k, n}, 2, d));
    cs.run = [x, w, tb] {
      MatmulOptions o;
      o.transpose_b = tb;
      matmul(*x, *w, o);
    };
    return cs;
  };
  auto memory_case = [&](const std::string& op, const Shape& shape, int reads_writes,
                         std::function<void(const std::vector<Tensor>&)> f, int inputs) {
    double n = double(numel(shape));
    Case cs{op, shape_str(shape), 0, reads_writes * n * 4, {}};
    if (!wanted(a, op)) return cs;
    auto in = std::make_shared<std::vector<Tensor>>();
    for (int i = 0; i < inputs; ++i) in->push_back(filled(shape, uint32_t(10 + i), d));
    cs.run = [in, f] { f(*in); };
    return cs;
  };
  Tensor gamma = filled({c}, 3, d), beta = filled({c}, 4, d);
  SoftmaxOptions causal;
  causal.causal = true;
  causal.q_len = cfg.seq;
  const Shape attn{cfg.batch * kHeads * cfg.seq, cfg.seq};

  std::vector<std::function<Case()>> cases = {
      [&] { return matmul_case("matmul_qkv", bt, c, 3 * c, false); },
      [&] { return matmul_case("matmul_attn_proj", bt, c, c, false); },
      [&] { return matmul_case("matmul_fc", bt, c, c4, false); },
      [&] { return matmul_case("matmul_proj", bt, c4, c, false); },
      [&] { return matmul_case("matmul_lm_head", bt, c, kVocab, true); },
      [&] {
        return memory_case("layernorm", {bt, c}, 2, [&](auto& t) { layernorm(t[0], gamma, beta); }, 1);
      },
      [&] {
        return memory_case("layernorm_bwd", {bt, c}, 4, [&](auto& t) { layernorm_bwd(t[0], gamma, t[1]); }, 2);
      },
      [&] { return memory_case("gelu", {bt, c4}, 2, [](auto& t) { gelu(t[0]); }, 1); },
      [&] { return memory_case("gelu_bwd", {bt, c4}, 3, [](auto& t) { gelu_bwd(t[0], t[1]); }, 2); },
      [&] { return memory_case("softmax_attn", attn, 2, [&](auto& t) { softmax(t[0], causal); }, 1); },
      [&] { return memory_case("softmax_bwd_attn", attn, 3, [](auto& t) { softmax_bwd(t[0], t[1]); }, 2); },
      [&] { return memory_case("softmax_logits", {bt, kVocab}, 2, [](auto& t) { softmax(t[0]); }, 1); },
      [&] { return memory_case("sum_rows", {bt, c4}, 1, [](auto& t) { sum_rows(t[0]); }, 1); },
      [&] { return memory_case("dropout", {bt, c}, 2, [](auto& t) { dropout(t[0], 0.1f, 7); }, 1); },
  };
  for (auto& make : cases) {
    Case cs;
    try {
      cs = make();
      if (!cs.run) continue;
      double ms = time_case(cs, d, a.min_time);
      nlohmann::json r{{"op", cs.op}, {"config", cfg.name}, {"shape", cs.shape}, {"device", d.name()}, {"ms", ms}};
      if (cs.flops) r["gflops"] = cs.flops / ms / 1e6;
      else r["gbps"] = cs.bytes / ms / 1e6;
      out.push_back(r);
      if (!a.json) {
        std::printf("%-8s %-17s %-6s %-32s %10.3f ms %9.1f %s\n", d.is_cpu() ? "cpu" : "webgpu", cs.op.c_str(),
                    cfg.name, cs.shape.c_str(), ms, cs.flops ? cs.flops / ms / 1e6 : cs.bytes / ms / 1e6,
                    cs.flops ? "GFLOP/s" : "GB/s");
        std::fflush(stdout);
      }
    } catch (const Error& e) {
      // Too large for this device (memory, binding limits): say so, go on.
      out.push_back({{"op", cs.op}, {"config", cfg.name}, {"device", d.name()}, {"skipped", e.what()}});
      if (!a.json) std::printf("%-8s %-17s %-6s skipped: %s\n", d.is_cpu() ? "cpu" : "webgpu", cs.op.c_str(),
                               cfg.name, e.what());
    }
  }
}

// Whole-model ops over the 124M parameters: AdamW and the gradient norm.
void bench_params(const BenchArgs& a, const Device& d, nlohmann::json& out) {
  const Shape s{kGpt2Params};
  std::vector<Case> cases;
  try {
    if (wanted(a, "adamw")) {
      auto st = std::make_shared<std::vector<Tensor>>(
          std::vector<Tensor>{filled(s, 1, d), filled(s, 2, d), Tensor::zeros(s, DType::F32, d),
                              Tensor::zeros(s, DType::F32, d)});
      auto step = std::make_shared<int64_t>(0);
      // Reads param, grad, m, v; writes param, m, v.
      cases.push_back({"adamw", shape_str(s), 0, 7.0 * kGpt2Params * 4, [st, step] {
                         auto& t = *st;
                         adamw(t[0], t[1], t[2], t[3], 6e-4, 0.9, 0.95, 1e-8, 0.1, ++*step);
                       }});
    }
    if (wanted(a, "sumsq")) {
      auto g = std::make_shared<Tensor>(filled(s, 3, d));
      cases.push_back({"sumsq", shape_str(s), 0, 4.0 * kGpt2Params, [g] { sumsq_tensor(*g); }});
    }
  } catch (const Error& e) {
    out.push_back({{"op", "adamw/sumsq"}, {"device", d.name()}, {"skipped", e.what()}});
    if (!a.json) std::printf("%-8s adamw/sumsq skipped: %s\n", d.is_cpu() ? "cpu" : "webgpu", e.what());
    return;
  }
  for (const Case& cs : cases) {
    double ms = 0;
    try {
      ms = time_case(cs, d, a.min_time);
    } catch (const Error& e) {
      out.push_back({{"op", cs.op}, {"device", d.name()}, {"skipped", e.what()}});
      if (!a.json) std::printf("%-8s %-17s skipped: %s\n", d.is_cpu() ? "cpu" : "webgpu", cs.op.c_str(), e.what());
      continue;
    }
    out.push_back({{"op", cs.op}, {"config", "124M"}, {"shape", cs.shape}, {"device", d.name()}, {"ms", ms},
                   {"gbps", cs.bytes / ms / 1e6}});
    if (!a.json)
      std::printf("%-8s %-17s %-6s %-32s %10.3f ms %9.1f GB/s\n", d.is_cpu() ? "cpu" : "webgpu", cs.op.c_str(),
                  "124M", cs.shape.c_str(), ms, cs.bytes / ms / 1e6);
  }
}

void bench(const BenchArgs& a) {
  std::vector<Device> devices;
  if (a.device == "cpu" || a.device == "all") devices.push_back(Device::cpu());
  if (a.device == "webgpu" || a.device == "all") devices.push_back(Device::webgpu());
  std::vector<Config> configs;
  if (a.size == "small" || a.size == "all") configs.push_back({"small", 4, 64});
  if (a.size == "large" || a.size == "all") configs.push_back({"large", 8, 1024});
  if (a.min_time < 0) throw ValueError("[bench ops] --min-time must be >= 0");
  nlohmann::json results = nlohmann::json::array();
  for (const Device& d : devices) {
    if (!a.json) std::printf("# %s\n", d.name().c_str());
    for (const Config& cfg : configs) bench_config(a, cfg, d, results);
    bench_params(a, d, results);
  }
  if (a.json) std::cout << nlohmann::json{{"bench", "ops"}, {"results", results}}.dump() << "\n";
}

const bool registered = register_bench(
    {"ops", "Op throughput at GPT-2 124M shapes (GFLOP/s, GB/s)", [](CLI::App& sub) {
       auto args = std::make_shared<BenchArgs>();
       sub.add_option("--device", args->device, "cpu, webgpu or all")
           ->check(CLI::IsMember({"cpu", "webgpu", "all"}));
       sub.add_option("--size", args->size, "small (B=4, T=64), large (B=8, T=1024) or all")
           ->check(CLI::IsMember({"small", "large", "all"}));
       sub.add_option("--op", args->ops, "Only these ops (matmul_qkv, layernorm, adamw, ...)");
       sub.add_option("--min-time", args->min_time, "Seconds to repeat each op for (after two warm-up calls)");
       sub.add_flag("--json", args->json, "Print one JSON object");
       sub.callback([args] { bench(*args); });
     }});

}  // namespace
}  // namespace forge::cli
