// Ops from several threads at once (include/forge/ops.h): four threads run
// their own chains of ops on the CPU and on the one WebGPU device, allocating,
// compiling, recording and reading back concurrently; every result is checked
// against the same chain run on one thread.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "forge/ops.h"
#include "parity/parity.h"
#include "unit/on_threads.h"

using namespace forge;
using forge::testing::all_close;
using forge::testing::random_tensor;

namespace {

// softmax(x @ w + x @ w) * 0.5 for a thread's shapes; odd sizes differ per
// thread so that threads build different pipelines and buffer sizes.
Tensor chain(const Tensor& x, const Tensor& w) {
  Tensor y = matmul(x, w);
  return scale(softmax(add(y, y)), 0.5f);
}

void run_threads(const Device& dev) {
  constexpr int kThreads = 4, kRounds = 12;
  std::vector<Tensor> xs, ws, want;
  for (int t = 0; t < kThreads; ++t) {
    const int64_t m = 3 + 2 * t, k = 17 + t, n = 9 + 4 * t;
    xs.push_back(random_tensor({m, k}, 10 + t));
    ws.push_back(random_tensor({k, n}, 20 + t));
    want.push_back(chain(xs.back(), ws.back()));
  }
  const std::vector<std::string> failures = forge::testing::on_threads(kThreads, [&](int t) -> std::string {
    for (int r = 0; r < kRounds; ++r) {
      Tensor x = xs[t].to(dev), w = ws[t].to(dev);
      Tensor got = chain(x, w);
      auto ok = all_close(got.to(Device::cpu()), want[t], 1e-5, 1e-4);
      if (!ok) return "round " + std::to_string(r) + ": " + ok.message();
    }
    return "";
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << dev.name() << ", thread " << t;
}

}  // namespace

TEST(OpsThreads, FourThreadsOnTheCpu) { run_threads(Device::cpu()); }

TEST(OpsThreads, FourThreadsOnWebGpu) { run_threads(forge::testing::gpu_device()); }
