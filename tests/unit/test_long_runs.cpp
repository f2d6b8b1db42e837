// Long runs keep memory flat: 20,000 generated tokens (repeated generate
// calls on one loaded model, whose context is 64) and 500 training steps of a
// tiny GPT-2, on the CPU. On SwiftShader a decode step takes a few hundred
// ms on a two-core machine, far too slow for 20,000 tokens in CI; the WebGPU
// pool's flatness under repeated work is WebGpuMemory's test. After a warm-up the process's resident
// set may not grow by more than a few MiB, and the WebGPU buffer pool's high
// water mark may not move at all. Each prints its high-water marks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "forge/generate.h"
#include "forge/gpt2.h"
#include "forge/gpt2_train.h"
#include "forge/model.h"
#include "parity/parity.h"

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

// Resident bytes now (/proc/self/statm, second field in pages).
double rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  f >> size >> resident;
  return double(resident) * double(::sysconf(_SC_PAGESIZE));
}

struct Marks {
  double rss_warm = 0, rss_end = 0, rss_max = 0;
  Device::MemoryStats gpu_warm, gpu_end;

  void warm(const Device& dev) {
    rss_warm = rss_bytes();
    gpu_warm = dev.memory_stats();
  }
  void sample() { rss_max = std::max(rss_max, rss_bytes()); }
  void end(const Device& dev, const char* what) {
    rss_end = rss_bytes();
    gpu_end = dev.memory_stats();
    std::printf("[ memory ] %s on %s: RSS %.1f MiB after warm-up, %.1f MiB at the end, %.1f MiB at most; "
                "GPU pool peak %.2f MiB after warm-up, %.2f MiB at the end (in use %.2f, pooled %.2f)\n",
                what, dev.name().c_str(), rss_warm / kMiB, rss_end / kMiB, rss_max / kMiB, gpu_warm.peak / kMiB,
                gpu_end.peak / kMiB, gpu_end.in_use / kMiB, gpu_end.pooled / kMiB);
    if (kRssMeaningful) EXPECT_LE(rss_max, rss_warm + kRssSlackMiB * kMiB) << what << " on " << dev.name();
    EXPECT_EQ(gpu_end.peak, gpu_warm.peak) << "the GPU pool grew: " << what << " on " << dev.name();
  }
};

}  // namespace

TEST(LongRun, Generate20000TokensKeepsMemoryFlat) {
  for (const Device& dev : {Device::cpu()}) {
    SCOPED_TRACE(dev.name());
    std::unique_ptr<CausalLM> model = load_model(std::string(FORGE_TEST_DATA) + "/gpt2-tiny", dev);
    ASSERT_EQ(model->context_length(), 64);
    GenerateOptions o;
    o.max_new_tokens = 60;  // prompt 4 + 60 fills the context of 64
    o.sample.temperature = 0.9f;
    o.sample.top_k = 50;
    Marks marks;
    int64_t tokens = 0;
    const int64_t total = dev.is_cpu() ? 20000 : 1200;
    const uint32_t warm = dev.is_cpu() ? 16 : 4;
    for (uint32_t call = 0; tokens < total; ++call) {
      o.sample.seed = call;
      const std::vector<uint32_t> prompt = {1 + call % 97, 2, 3, 4};
      const std::vector<uint32_t> ids = generate(*model, prompt, o);
      ASSERT_EQ(ids.size(), 60u);  // the eos id (50256) is past the vocab of 1000: never drawn
      for (uint32_t id : ids) ASSERT_LT(id, 1000u);
      tokens += int64_t(ids.size());
      if (call == warm) marks.warm(dev);
      if (call > warm) marks.sample();
    }
    marks.end(dev, dev.is_cpu() ? "20000 generated tokens" : "1200 generated tokens");
  }
}

TEST(LongRun, Train500StepsKeepsMemoryFlat) {
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
  for (const Device& dev : {Device::cpu()}) {
    SCOPED_TRACE(dev.name());
    Gpt2 model = Gpt2::random(c, 7, dev);
    Gpt2TrainConfig tc;
    tc.schedule.lr = 3e-3;
    tc.schedule.cosine = false;
    tc.grad_clip = 1.0f;
    Gpt2Trainer trainer(model, tc);
    Marks marks;
    float first = 0, last = 0;
    const int steps = dev.is_cpu() ? 500 : 150;
    for (int step = 0; step < steps; ++step) {
      const Gpt2StepResult r = trainer.step({batches[step % 4]});
      ASSERT_TRUE(std::isfinite(r.loss)) << "step " << step;
      if (step < 4) first += r.loss / 4;
      if (step >= steps - 4) last += r.loss / 4;
      if (step == 20) marks.warm(dev);
      if (step > 20) marks.sample();
    }
    // ln(64) = 4.16 at the start; four batches of 32 tokens are learned by heart.
    EXPECT_LT(last, first - (dev.is_cpu() ? 1.0f : 0.3f)) << "first " << first << ", last " << last;
    marks.end(dev, dev.is_cpu() ? "500 training steps" : "150 training steps");
  }
}
