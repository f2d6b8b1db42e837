// forge bench matmul: GFLOP/s of f32 matmuls by shape (square sizes, or
// MxKxN products such as a training step's), operand layout (nn, tn, nt, tt:
// which of A and B are stored transposed) and device.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <random>

#include "bench_util.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/ops.h"
#include "gpu/runtime.h"

namespace forge::cli {
namespace {

struct Product {
  int64_t m, k, n;  // C [m, n] = A [m, k] @ B [k, n]
};

// "MxKxN" (e.g. 2048x960x320) as a product.
Product parse_shape(const std::string& s) {
  Product p{};
  char x1 = 0, x2 = 0;
  int used = 0;
  long long m = 0, k = 0, n = 0;
  if (std::sscanf(s.c_str(), "%lld%c%lld%c%lld%n", &m, &x1, &k, &x2, &n, &used) != 5 || x1 != 'x' || x2 != 'x' ||
      used != int(s.size()) || m < 1 || k < 1 || n < 1)
    throw CLI::ValidationError("--shapes", "'" + s + "' is not MxKxN with positive sizes (e.g. 2048x960x320)");
  p.m = m, p.k = k, p.n = n;
  return p;
}

void run(const std::string& device, const std::vector<int64_t>& sizes, const std::vector<std::string>& shapes,
         const std::vector<std::string>& layouts, bool json) {
  std::vector<Product> products;
  for (const std::string& s : shapes) products.push_back(parse_shape(s));
  if (shapes.empty())
    for (int64_t n : sizes) products.push_back({n, n, n});
  nlohmann::json results = nlohmann::json::array();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto random = [&](Shape shape, const Device& d) {
    std::vector<float> v(size_t(shape[0] * shape[1]));
    for (auto& x : v) x = dist(rng);
    return Tensor::from_vector(v, shape, d);
  };
  for (const Device& d : resolve_devices(device)) {
    for (const Product& pr : products) {
      for (const std::string& layout : layouts) {
        MatmulOptions o;
        o.transpose_a = layout[0] == 't';
        o.transpose_b = layout[1] == 't';
        // Stored transposed: A as [k, m], B as [n, k].
        Tensor a = o.transpose_a ? random({pr.k, pr.m}, d) : random({pr.m, pr.k}, d);
        Tensor b = o.transpose_b ? random({pr.n, pr.k}, d) : random({pr.k, pr.n}, d);
        double s = time_per_call(d, [&] { matmul(a, b, o); }, 3);
        double gflops = 2.0 * double(pr.m) * double(pr.k) * double(pr.n) / s / 1e9;
        nlohmann::json r{{"device", d.name()}, {"layout", layout}, {"m", pr.m},         {"n", pr.n},
                         {"k", pr.k},          {"ms", s * 1e3},    {"gflops", gflops}};
        add_blas(r, d);
        results.push_back(r);
        if (!json)
          std::printf("%-36s %6lldx%lldx%lld %s  %9.3f ms  %9.1f GFLOP/s\n", d.name().c_str(), (long long)pr.m,
                      (long long)pr.k, (long long)pr.n, layout.c_str(), s * 1e3, gflops);
      }
    }
  }
  if (json) std::printf("%s\n", nlohmann::json{{"bench", "matmul"}, {"results", results}}.dump(2).c_str());
}

const bool registered = register_bench({"matmul", "GFLOP/s of f32 matmuls by shape, layout and device", [](CLI::App& sub) {
                                          static std::string device = "auto";
                                          static std::vector<int64_t> sizes{256, 512, 1024, 2048};
                                          static std::vector<std::string> shapes;
                                          static std::vector<std::string> layouts{"nn"};
                                          static bool json = false;
                                          add_device_option(sub, device, true);
                                          add_int_list_option(sub, "--sizes", sizes, "Square matrix sizes", 1)
                                              ->default_str("256,512,1024,2048");
                                          add_list_option(sub, "--shapes", shapes,
                                                          "Products MxKxN (A [M, K] @ B [K, N]); replace --sizes");
                                          add_list_option(sub, "--layouts", layouts,
                                                          "Operand layouts: nn, tn, nt, tt (t: stored transposed)",
                                                          {"nn", "tn", "nt", "tt"})
                                              ->default_str("nn");
                                          sub.add_flag("--json", json, "Print JSON");
                                          sub.callback([] { run(device, sizes, shapes, layouts, json); });
                                        }});

}  // namespace
}  // namespace forge::cli
