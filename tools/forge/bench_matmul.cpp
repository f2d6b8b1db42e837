// forge bench matmul: GFLOP/s of square f32 matmuls by size, operand layout
// (nn, tn, nt, tt: which of A and B are stored transposed) and device.
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

#include "bench_util.h"
#include "command.h"
#include "devices.h"
#include "forge/ops.h"
#include "gpu/runtime.h"

namespace forge::cli {
namespace {

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

void run(const std::string& device, std::vector<int64_t> sizes, const std::vector<std::string>& layouts, bool json) {
  nlohmann::json results = nlohmann::json::array();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const Device& d : resolve_devices(device)) {
    for (int64_t n : sizes) {
      std::vector<float> va(size_t(n * n)), vb(size_t(n * n));
      for (auto& x : va) x = dist(rng);
      for (auto& x : vb) x = dist(rng);
      Tensor a = Tensor::from_vector(va, {n, n}, d), b = Tensor::from_vector(vb, {n, n}, d);
      for (const std::string& layout : layouts) {
        MatmulOptions o;
        o.transpose_a = layout[0] == 't';
        o.transpose_b = layout[1] == 't';
        double s = time_per_call(d, [&] { matmul(a, b, o); }, 3);
        double gflops = 2.0 * double(n) * double(n) * double(n) / s / 1e9;
        results.push_back({{"device", d.name()},
                           {"layout", layout},
                           {"m", n},
                           {"n", n},
                           {"k", n},
                           {"ms", s * 1e3},
                           {"gflops", gflops}});
        if (!json)
          std::printf("%-36s %5lld^3 %s  %9.3f ms  %9.1f GFLOP/s\n", d.name().c_str(), (long long)n, layout.c_str(),
                      s * 1e3, gflops);
      }
    }
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "matmul"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench({"matmul", "GFLOP/s of square f32 matmuls by size, layout and device", [](CLI::App& sub) {
                                          static std::string device = "auto";
                                          static std::vector<int64_t> sizes{256, 512, 1024, 2048};
                                          static std::vector<std::string> layouts{"nn"};
                                          static bool json = false;
                                          add_device_option(sub, device, true);
                                          sub.add_option("--sizes", sizes, "Matrix sizes")->delimiter(',');
                                          sub.add_option("--layouts", layouts,
                                                         "Operand layouts: nn, tn, nt, tt (t: stored transposed)")
                                              ->delimiter(',')
                                              ->check(CLI::IsMember({"nn", "tn", "nt", "tt"}));
                                          sub.add_flag("--json", json, "Print JSON");
                                          sub.callback([] { run(device, sizes, layouts, json); });
                                        }});

}  // namespace
}  // namespace forge::cli
