// forge bench attention: flash attention forward and backward at GPT-2 124M
// (12 heads, head_dim 64) and SmolLM2-360M (15 query heads, 5 KV heads,
// head_dim 64) shapes: a causal 1024-token prefill and a one-token decode
// over a 1024-entry KV cache; the attention of GPT-2's B8 x T1024 training
// step; and that of a fine-tuning step at B4 x T512 (causal) for
// SmolLM2-135M (9 query heads, 3 KV heads) and SmolLM2-360M. Reports ms and TFLOP/s counting 4 * D flops
// per visible (query, key) pair forward and 10 * D backward (the two and five
// matmul-equivalents; the backward's recomputation of P is not counted).
// Names the forward and grad_k / grad_v kernels each shape ran (fwd_kernel,
// bwd_kernel). bench/torch_attention.py
// measures the same shapes with PyTorch.
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

#include "bench_util.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/ops.h"
#include "gpu/runtime.h"
#include "webgpu/attention_kernels.h"

namespace forge::cli {
namespace {

struct Model {
  const char* name;
  int64_t heads, kv_heads, dim;
};

struct Shape4 {
  const char* phase;
  int64_t batch, seq_q, seq_k, offset;
};

struct Case {
  Model model;
  Shape4 shape;
};

Tensor random(const Shape& s, std::mt19937& rng, const Device& d) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(size_t(numel(s)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_vector(v, s, d);
}

void run(const std::string& device, int64_t seq, bool json) {
  const Model gpt2{"gpt2-124m", 12, 12, 64}, smol135{"smollm2-135m", 9, 3, 64}, smol360{"smollm2-360m", 15, 5, 64};
  const Shape4 prefill{"prefill", 1, seq, seq, 0}, decode{"decode", 1, 1, seq + 1, seq}, train{"train", 4, 512, 512, 0},
               train_gpt2{"train", 8, 1024, 1024, 0};
  const Case cases[] = {{gpt2, prefill},   {gpt2, decode},    {smol360, prefill},
                        {smol360, decode}, {gpt2, train_gpt2}, {smol135, train}, {smol360, train}};
  nlohmann::json results = nlohmann::json::array();
  std::mt19937 rng(7);
  for (const Device& d : resolve_devices(device)) {
    for (const auto& [m, s] : cases) {
      Tensor q = random({s.batch, s.seq_q, m.heads, m.dim}, rng, d);
      Tensor k = random({s.batch, s.seq_k, m.kv_heads, m.dim}, rng, d);
      Tensor v = random({s.batch, s.seq_k, m.kv_heads, m.dim}, rng, d);
      Tensor g = random({s.batch, s.seq_q, m.heads, m.dim}, rng, d);
      AttentionOptions o;
      o.causal = true;
      o.kv_offset = s.offset;
      // Visible (query, key) pairs: query i sees offset + i + 1 keys.
      double pairs = 0;
      for (int64_t i = 0; i < s.seq_q; ++i) pairs += double(std::min(s.seq_k, s.offset + i + 1));
      pairs *= double(s.batch * m.heads);
      AttentionForward f = flash_attention_v2_lse(q, k, v, o);
      double fwd = time_per_call(d, [&] { flash_attention_v2(q, k, v, o); }, 2);
      double bwd = time_per_call(d, [&] { flash_attention_v2_backward(q, k, v, f.out, g, o, nullptr, &f.lse); }, 2);
      double fwd_tf = 4.0 * double(m.dim) * pairs / fwd / 1e12, bwd_tf = 10.0 * double(m.dim) * pairs / bwd / 1e12;
      std::string kernel = d.is_webgpu() ? webgpu::attention_forward_kernel(s.seq_q, m.dim, d.runtime()) : "cpu";
      AttentionPlan plan;
      plan.batch = s.batch, plan.seq_q = s.seq_q, plan.seq_k = s.seq_k, plan.heads = m.heads;
      plan.kv_heads = m.kv_heads, plan.head_dim = m.dim, plan.kv_offset = s.offset, plan.causal = true;
      std::string bwd_kernel = d.is_webgpu() ? webgpu::attention_backward_kernel(plan, d) : "cpu";
      results.push_back({{"device", d.name()}, {"model", m.name}, {"phase", s.phase}, {"batch", s.batch},
                         {"heads", m.heads}, {"kv_heads", m.kv_heads}, {"head_dim", m.dim}, {"seq_q", s.seq_q},
                         {"seq_k", s.seq_k}, {"causal", true}, {"fwd_kernel", kernel}, {"bwd_kernel", bwd_kernel},
                         {"fwd_ms", fwd * 1e3}, {"fwd_tflops", fwd_tf}, {"bwd_ms", bwd * 1e3}, {"bwd_tflops", bwd_tf}});
      if (!json)
        std::printf(
            "%-28s %-13s %-7s b %lld q %4lld k %4lld  fwd %9.3f ms %8.4f TFLOP/s  bwd %9.3f ms %8.4f TFLOP/s  %s, %s\n",
            d.name().c_str(), m.name, s.phase, (long long)s.batch, (long long)s.seq_q, (long long)s.seq_k, fwd * 1e3,
            fwd_tf, bwd * 1e3, bwd_tf, kernel.c_str(), bwd_kernel.c_str());
    }
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "attention"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench(
    {"attention", "flash attention forward/backward at GPT-2 124M and SmolLM2 shapes", [](CLI::App& sub) {
       static std::string device = "auto";
       static int64_t seq = 1024;
       static bool json = false;
       add_device_option(sub, device, true);
       check_at_least(sub.add_option("--seq", seq, "Prefill length and decode cache length"), 1);
       sub.add_flag("--json", json, "Print JSON");
       sub.callback([] { run(device, seq, json); });
     }});

}  // namespace
}  // namespace forge::cli
