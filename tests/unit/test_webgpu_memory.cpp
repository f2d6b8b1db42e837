// The WebGPU buffer pool: a memory cap reached is a GpuError naming the tensor
// and the sizes, after which the device goes on working; the pool gives its
// buffers back when asked (trim) and when they sit unused; reusing one shape
// keeps the pool's high water mark where it is. Each test opens a device of
// its own (SwiftShader where installed, else the GPU's), so its cap and pool
// are its own.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "forge/ops.h"
#include "parity/parity.h"
#include "webgpu/dawn/dawn_runtime.h"

using namespace forge;

namespace {

// A device of the test's own, whose memory limit leaves the suite's shared
// device alone: SwiftShader where it is installed (CI), else the GPU's.
Device private_device() {
  std::shared_ptr<gpu::Runtime> rt = gpu::create_runtime(gpu::AdapterPreference::Software);
  if (!rt) rt = gpu::create_runtime(gpu::AdapterPreference::Any);
  if (!rt) throw std::runtime_error("no WebGPU adapter");
  return Device(rt);
}

constexpr uint64_t kMiB = 1 << 20;

}  // namespace

TEST(WebGpuMemory, OutOfMemoryNamesTheTensorAndTheDeviceStaysUsable) {
  Device dev = private_device();
  dev.set_memory_limit(kMiB);
  Tensor a = Tensor::zeros({96, 1024}, DType::F32, dev);   // 384 KiB
  Tensor b = Tensor::zeros({100, 1024}, DType::F32, dev);  // 400 KiB (a 448 KiB bucket)
  try {
    Tensor c = Tensor::zeros({64, 1024}, DType::F32, dev);
    ADD_FAILURE() << "allocated past the limit: " << dev.memory_stats().in_use << " bytes in use";
  } catch (const GpuError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("f32 [64, 1024] (262144 bytes)"), std::string::npos) << m;
    EXPECT_NE(m.find("out of device memory"), std::string::npos) << m;
    EXPECT_NE(m.find("limit of 1048576 bytes"), std::string::npos) << m;
  }
  // Freeing b makes room: its pooled buffer is given back for the new sizes
  // (a 384 KiB, c and d 128 KiB each, and d's read back 128 KiB).
  b = Tensor();
  Tensor c = Tensor::from_vector<float>(std::vector<float>(32 * 1024, 1.5f), {32, 1024}, dev);
  Tensor d = scale(c, 2.0f);
  const std::vector<float> v = d.to_vector<float>();
  ASSERT_EQ(v.size(), 32u * 1024u);
  EXPECT_EQ(v.front(), 3.0f);
  EXPECT_EQ(v.back(), 3.0f);
  EXPECT_LE(dev.memory_stats().in_use + dev.memory_stats().pooled, kMiB);
  dev.set_memory_limit(0);
  Tensor big = Tensor::zeros({512, 1024}, DType::F32, dev);  // 2 MiB once the cap is lifted
  EXPECT_EQ(big.to_vector<float>()[1000], 0.0f);
}

TEST(WebGpuMemory, PoolGivesMemoryBackOnTrimAndWhenIdle) {
  Device dev = private_device();
  Tensor small = Tensor::from_vector<float>({1, 2, 3}, {3}, dev);
  {
    Tensor t = Tensor::zeros({256, 1024}, DType::F32, dev);  // 1 MiB
    EXPECT_GE(dev.memory_stats().in_use, kMiB);
  }
  EXPECT_GE(dev.memory_stats().pooled, kMiB);
  const uint64_t in_use = dev.memory_stats().in_use;
  EXPECT_GE(dev.trim_memory(), kMiB);
  EXPECT_EQ(dev.memory_stats().pooled, 0u);
  EXPECT_EQ(dev.memory_stats().in_use, in_use) << "trim touched live buffers";
  EXPECT_EQ(small.to_vector<float>(), (std::vector<float>{1, 2, 3}));  // bind groups rebuilt as needed

  // Idle: buffers unused for the idle time go back at the next read back.
  dev.runtime().set_pool_idle_seconds(0.05);
  { Tensor t = Tensor::zeros({256, 1024}, DType::F32, dev); }
  EXPECT_GE(dev.memory_stats().pooled, kMiB);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(small.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_LT(dev.memory_stats().pooled, kMiB) << "an idle megabyte stayed in the pool";

  // The same shapes again and again reuse the pool: its peak does not move.
  dev.runtime().set_pool_idle_seconds(30);
  const auto round = [&] {
    Tensor x = Tensor::zeros({64, 64}, DType::F32, dev);
    Tensor y = matmul(add(x, x), x);
    (void)y.to_vector<float>();
  };
  round();
  const uint64_t peak = dev.memory_stats().peak;
  for (int i = 0; i < 20; ++i) round();
  EXPECT_EQ(dev.memory_stats().peak, peak);
}
