// Long runs keep memory flat, on the CPU and on WebGPU (SwiftShader where
// there is no GPU):
//  - generation: one generate() call of greedy tokens on the tiny GPT-2
//    (context 64) with context_shift, as `forge generate --context-shift`
//    runs: the cache fills, half of it is dropped and re-prefilled, again and
//    again in one loop;
//  - training: steps of a tiny GPT-2 on four batches in turn.
// After a warm-up (a tenth of the run) the process's resident set may not
// grow by more than kRssSlackMiB, and the WebGPU buffer pool's high-water
// mark may not move at all. At the end the pool gives its memory back when
// asked (trim) and when idle. Each test prints its high-water marks.
//
// Every device runs 20,000 tokens and 500 steps, SwiftShader too: there the
// tiny model's products take the barrier-free matrix-vector kernel (a CPU
// driver runs a workgroup with barriers as coroutines, milliseconds each), so
// both runs take a minute or two on two cores.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "forge/generate.h"
#include "forge/gpt2.h"
#include "forge/gpt2_train.h"
#include "forge/model.h"
#include "gpu/runtime.h"
#include "parity/parity.h"
#include "unit/this_build.h"

using namespace forge;

namespace {

// Under AddressSanitizer freed memory waits in a quarantine of up to 256 MiB,
// so the resident set grows without a leak; LeakSanitizer checks leaks there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kRssSlackMiB = 8.0;  // allocator and driver noise; a leak of 1 KiB per token is 20 MiB
// On SwiftShader the driver's own heaps (its JIT, its worker threads) grow in
// steps of 6-11 MiB that do not follow the run's length: +24 MiB over 150
// training steps, +16 over 300, with the pool flat. There the pool's
// high-water mark is the leak check that counts; RSS gets this bound.
constexpr double kSoftwareRssSlackMiB = 40.0;
constexpr int64_t kTokens = 20000;
constexpr int kSteps = 500;

// Resident bytes now (/proc/self/statm, second field in pages).
double rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  f >> size >> resident;
  return double(resident) * double(::sysconf(_SC_PAGESIZE));
}

bool is_software(const Device& dev) { return dev.is_webgpu() && dev.runtime().adapter().adapter_type == "cpu"; }

// High-water marks: at the warm-up (a tenth of the run) and at the end.
struct Marks {
  double rss_warm = 0, rss_max = 0;
  Device::MemoryStats gpu_warm;
  bool warmed = false;

  void warm(const Device& dev) {
    rss_warm = rss_max = rss_bytes();
    gpu_warm = dev.memory_stats();
    warmed = true;
  }
  void sample() {
    if (warmed) rss_max = std::max(rss_max, rss_bytes());
  }
  void end(const Device& dev, const std::string& what, double seconds) {
    ASSERT_TRUE(warmed);
    sample();
    const Device::MemoryStats gpu = dev.memory_stats();
    std::printf("[ memory ] %s on %s in %.1f s: RSS %.1f MiB after warm-up, %.1f MiB at most after it "
                "(+%.2f MiB)",
                what.c_str(), dev.name().c_str(), seconds, rss_warm / kMiB, rss_max / kMiB, (rss_max - rss_warm) / kMiB);
    if (dev.is_webgpu())
      std::printf("; GPU pool high-water %.3f MiB after warm-up, %.3f MiB at the end (in use %.3f, pooled %.3f)",
                  gpu_warm.peak / kMiB, gpu.peak / kMiB, gpu.in_use / kMiB, gpu.pooled / kMiB);
    std::printf("\n");
    const double slack = is_software(dev) ? kSoftwareRssSlackMiB : kRssSlackMiB;
    if (kRssMeaningful) EXPECT_LE(rss_max, rss_warm + slack * kMiB) << what << " on " << dev.name();
    EXPECT_EQ(gpu.peak, gpu_warm.peak) << "the GPU pool grew: " << what << " on " << dev.name();
  }
};

// After a run the pool gives back what it holds: on trim(), and by itself
// once buffers have sat unused for the idle time (a read back checks).
void expect_pool_gives_memory_back(const Device& dev) {
  if (!dev.is_webgpu()) return;
  gpu::Runtime& rt = dev.runtime();
  const Device::MemoryStats before = dev.memory_stats();
  EXPECT_GT(before.pooled, 0u) << "nothing pooled after a long run";
  const uint64_t released = dev.trim_memory();
  const Device::MemoryStats after = dev.memory_stats();
  EXPECT_EQ(released, before.pooled);
  EXPECT_EQ(after.pooled, 0u);
  EXPECT_EQ(after.in_use, before.in_use) << "trim touched live buffers";

  // Idle: a burst of work leaves buffers in the pool; after the idle time a
  // read back gives them back (a short idle time, so the test need not wait long).
  rt.set_pool_idle_seconds(0.05);
  Tensor keep = Tensor::from_vector<float>({1, 2, 3}, {3}, dev);
  { Tensor burst = scale(Tensor::zeros({256, 1024}, DType::F32, dev), 2.0f); }
  const uint64_t pooled = dev.memory_stats().pooled;
  EXPECT_GE(pooled, uint64_t(2 * kMiB));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(keep.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  const uint64_t idle_left = dev.memory_stats().pooled;
  EXPECT_LT(idle_left, uint64_t(kMiB)) << "idle buffers stayed in the pool";
  std::printf("[ memory ] pool on %s: trim gave back %.3f MiB (in use %.3f MiB stayed); idle release %.3f -> %.3f MiB\n",
              dev.name().c_str(), released / kMiB, after.in_use / kMiB, pooled / kMiB, idle_left / kMiB);
  rt.set_pool_idle_seconds(30);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void generate_long(const Device& dev, int64_t tokens) {
  std::unique_ptr<CausalLM> model = load_model(std::string(forge::testing::test_data_dir()) + "/gpt2-tiny", dev);
  ASSERT_EQ(model->context_length(), 64);
  GenerateOptions o;
  o.max_new_tokens = tokens;
  o.sample.temperature = 0;  // greedy
  o.context_shift = true;
  o.keep = 2;
  Marks marks;
  int64_t n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<uint32_t> ids = generate(*model, {1, 2, 3, 4}, o, [&](uint32_t id) {
    ++n;
    if (n == tokens / 10) marks.warm(dev);
    if (n % 64 == 0) marks.sample();
    return true;
  });
  const double s = seconds_since(t0);
  ASSERT_EQ(int64_t(ids.size()), tokens);
  for (uint32_t id : ids) ASSERT_LT(id, 1000u);  // the vocab
  marks.end(dev, std::to_string(tokens) + " greedy tokens with context shift (context 64)", s);
  expect_pool_gives_memory_back(dev);
}

void train_long(const Device& dev, int steps) {
  Gpt2Config c;
  c.vocab_size = 64;
  c.n_positions = 16;
  c.n_embd = 32;
  c.n_layer = 1;
  c.n_head = 2;
  const int64_t B = 2, T = 16;
  // Four fixed batches in turn, so the loss must fall.
  std::vector<Gpt2MicroBatch> batches;
  for (uint32_t k = 0; k < 4; ++k) {
    std::vector<uint32_t> ids(B * T);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (k * 7 + uint32_t(i) * 5 + (uint32_t(i) / 3)) % 64;
    Tensor t = Tensor::from_vector<uint32_t>(ids, {B, T});
    batches.push_back({t, gpt2_shifted_targets(t)});
  }
  Gpt2 model = Gpt2::random(c, 7, dev);
  Gpt2TrainConfig tc;
  tc.schedule.lr = 3e-3;
  tc.schedule.cosine = false;
  tc.grad_clip = 1.0f;
  Gpt2Trainer trainer(model, tc);
  Marks marks;
  float first = 0, last = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    const Gpt2StepResult r = trainer.step({batches[step % 4]});
    ASSERT_TRUE(std::isfinite(r.loss)) << "step " << step;
    if (step < 4) first += r.loss / 4;
    if (step >= steps - 4) last += r.loss / 4;
    if (step == steps / 10) marks.warm(dev);
    marks.sample();
  }
  const double s = seconds_since(t0);
  // ln(64) = 4.16 at the start; four batches of 32 tokens are learned by heart.
  EXPECT_LT(last, first - 1.0f) << "first " << first << ", last " << last;
  marks.end(dev, std::to_string(steps) + " training steps", s);
  expect_pool_gives_memory_back(dev);
}

}  // namespace

TEST(LongRun, Generate20000TokensKeepsMemoryFlatCpu) { generate_long(Device::cpu(), kTokens); }

TEST(LongRun, Generate20000TokensKeepsMemoryFlatWebGpu) {
  generate_long(forge::testing::own_webgpu_device(), kTokens);
}

TEST(LongRun, Train500StepsKeepsMemoryFlatCpu) { train_long(Device::cpu(), kSteps); }

TEST(LongRun, Train500StepsKeepsMemoryFlatWebGpu) { train_long(forge::testing::own_webgpu_device(), kSteps); }
