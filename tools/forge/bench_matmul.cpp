// forge bench matmul: GFLOP/s of square f32 matmuls by size and device.
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

#include "command.h"
#include "devices.h"
#include "forge/ops.h"
#include "gpu/runtime.h"

namespace forge::cli {
namespace {

void sync(const Device& d) {
  if (d.is_webgpu()) d.runtime().sync();
}

// Seconds per call of fn, after warm-up, over at least `min_iters` calls and ~0.5 s.
template <class Fn>
double time_per_call(const Device& d, Fn fn, int min_iters) {
  fn();
  fn();
  sync(d);
  int iters = 0;
  auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (iters < min_iters || elapsed < 0.5) {
    fn();
    ++iters;
    if (iters % 4 == 0 || iters >= min_iters) {
      sync(d);
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  sync(d);
  elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return elapsed / iters;
}

void run(const std::string& device, std::vector<int64_t> sizes, bool json) {
  nlohmann::json results = nlohmann::json::array();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const Device& d : resolve_devices(device)) {
    for (int64_t n : sizes) {
      std::vector<float> va(size_t(n * n)), vb(size_t(n * n));
      for (auto& x : va) x = dist(rng);
      for (auto& x : vb) x = dist(rng);
      Tensor a = Tensor::from_vector(va, {n, n}, d), b = Tensor::from_vector(vb, {n, n}, d);
      double s = time_per_call(d, [&] { matmul(a, b); }, 3);
      double gflops = 2.0 * double(n) * double(n) * double(n) / s / 1e9;
      results.push_back({{"device", d.name()}, {"m", n}, {"n", n}, {"k", n}, {"ms", s * 1e3}, {"gflops", gflops}});
      if (!json) std::printf("%-36s %5lld^3  %9.3f ms  %9.1f GFLOP/s\n", d.name().c_str(), (long long)n, s * 1e3, gflops);
    }
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "matmul"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench({"matmul", "GFLOP/s of square f32 matmuls by size and device", [](CLI::App& sub) {
                                          static std::string device = "auto";
                                          static std::vector<int64_t> sizes{256, 512, 1024, 2048};
                                          static bool json = false;
                                          add_device_option(sub, device, true);
                                          sub.add_option("--sizes", sizes, "Matrix sizes")->delimiter(',');
                                          sub.add_flag("--json", json, "Print JSON");
                                          sub.callback([] { run(device, sizes, json); });
                                        }});

}  // namespace
}  // namespace forge::cli
