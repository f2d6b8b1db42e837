// forge demo: a small attention-shaped computation (matmul, softmax, matmul)
// on each device, with the result checked against the CPU.
#include <chrono>
#include <cmath>
#include <random>

#include "command.h"
#include "devices.h"
#include "forge/ops.h"

namespace forge::cli {
namespace {

Tensor attention_like(const Tensor& q, const Tensor& k, const Tensor& v) {
  MatmulOptions qk;
  qk.transpose_b = true;
  qk.alpha = 1.0f / std::sqrt(float(q.dim(-1)));
  SoftmaxOptions causal;
  causal.causal = true;
  return matmul(softmax(matmul(q, k, qk), causal), v);
}

void run_demo(const std::string& device) {
  const int64_t heads = 4, t = 128, hd = 64;
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist;
  auto make = [&] {
    std::vector<float> v(size_t(heads * t * hd));
    for (auto& x : v) x = dist(rng);
    return Tensor::from_vector(v, {heads, t, hd});
  };
  Tensor q = make(), k = make(), v = make();
  std::vector<float> reference = attention_like(q, k, v).to_vector<float>();
  for (const Device& d : resolve_devices(device)) {
    auto start = std::chrono::steady_clock::now();
    std::vector<float> got = attention_like(q.to(d), k.to(d), v.to(d)).to_vector<float>();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    double max_err = 0, checksum = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_err = std::max(max_err, double(std::fabs(got[i] - reference[i])));
      checksum += got[i];
    }
    std::printf("%-40s causal attention [%lld heads, %lld tokens, %lld dims]: checksum %.6f, max |diff| vs cpu %.2e, %.1f ms\n",
                d.name().c_str(), (long long)heads, (long long)t, (long long)hd, checksum, max_err, ms);
    if (max_err > 1e-4) throw Error("[demo] " + d.name() + " disagrees with the CPU by " + std::to_string(max_err));
  }
}

const bool registered = register_command({"demo", "Run a small attention computation on each device and compare",
                                          [](CLI::App& sub) {
                                            static std::string device = "all";
                                            add_device_option(sub, device, true);
                                            sub.callback([] { run_demo(device); });
                                          }});

}  // namespace
}  // namespace forge::cli
