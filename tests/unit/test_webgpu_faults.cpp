// Faults on the WebGPU device: waits that time out, buffers larger than the
// device allows, garbage in FORGE_GPU_TIMEOUT. Each ends in a forge error
// and the process goes on working.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include <cstdio>
#include <string>

#include "forge/ops.h"
#include "forge/safetensors.h"
#include "parity/parity.h"
#include "webgpu/dawn/dawn_runtime.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::all_close;
using forge::testing::gpu_device;
using forge::testing::random_tensor;

namespace {

webgpu::DawnRuntime& dawn() {
  auto* rt = dynamic_cast<webgpu::DawnRuntime*>(&gpu_device().runtime());
  if (!rt) throw std::runtime_error("the WebGPU device is not the Dawn runtime");
  return *rt;
}

// Lowers the wait limit for a scope, restoring it even on failure.
struct LoweredTimeout {
  explicit LoweredTimeout(double s) : saved(dawn().timeout_seconds()) { dawn().set_timeout_for_testing(s); }
  ~LoweredTimeout() { dawn().set_timeout_for_testing(saved); }
  double saved;
};

struct CliRun {
  int code;       // exit status, -1 when killed by a signal
  std::string out;
};

CliRun run_cli(const std::string& env_and_args) {
  const std::string cmd = env_and_args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST(WebGpuFaults, TimedOutWaitIsAGpuErrorAndTheDeviceStaysUsable) {
  const int64_t n = 384;
  Tensor a = random_tensor({n, n}, 1), b = random_tensor({n, n}, 2);
  Tensor ga = a.to(gpu_device()), gb = b.to(gpu_device());
  {
    // Compiles the kernel and fills the pools, so that the timed wait is the read back.
    Tensor warm = matmul(ga, gb);
    (void)warm.to_vector<float>();
  }
  Tensor gc;
  {
    LoweredTimeout lowered(1e-6);
    try {
      gc = matmul(ga, gb);
      (void)gc.to_vector<float>();
      ADD_FAILURE() << "a 1 us limit did not time out";
    } catch (const GpuError& e) {
      EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
  }
  // Used to abort with heap corruption here: the mapping callback wrote into
  // freed state once the device finished.
  gpu_device().runtime().sync();
  if (gc.defined()) EXPECT_TRUE(all_close(gc.to(Device::cpu()), matmul(a, b), 1e-4, 1e-4));
  Tensor s = scale(Tensor::from_vector<float>({1, 2, 3}, {3}, gpu_device()), 2.0f);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(WebGpuFaults, GarbageTimeoutInTheEnvironmentIsAClearError) {
  for (const char* value : {"abc", "0", "-5", "1e999", "5s"}) {
    CliRun r = run_cli(std::string("FORGE_GPU_TIMEOUT=") + value + " " + forge::testing::cli_path() + " info");
    EXPECT_EQ(r.code, 1) << value << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("FORGE_GPU_TIMEOUT='") + value + "' is not a positive number"),
              std::string::npos)
        << r.out;
  }
  // A tiny limit makes the read back of the logits time out: an error and no
  // output file, not an abort with a corrupted heap.
  const std::string fx = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";
  const std::string out = ::testing::TempDir() + "forge_timeout_eval.safetensors";
  std::remove(out.c_str());
  CliRun r = run_cli(std::string("FORGE_GPU_TIMEOUT=0.000001 ") + forge::testing::cli_path() + " eval --model " + fx +
                     " --input " + fx + "/reference.safetensors --output " + out + " --device webgpu");
  EXPECT_EQ(r.out.find("free()"), std::string::npos) << r.out;
  if (r.code == 0) {
    // A hardware GPU may finish this tiny model before a wait first reads
    // the clock (an H100 did): then the output is whole. SwiftShader never
    // does, so there the timeout path is what runs.
    EXPECT_EQ(r.out.find("SwiftShader"), std::string::npos) << "SwiftShader finished within 1 us: " << r.out;
    SafetensorsFile f = SafetensorsFile::open(out);
    EXPECT_EQ(f.get("logits").shape(), (Shape{2, 16, 1000}));
    EXPECT_EQ(f.get("loss").numel(), 1);
    std::remove(out.c_str());
    return;
  }
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("timed out"), std::string::npos) << r.out;
  FILE* f = std::fopen(out.c_str(), "rb");
  EXPECT_EQ(f, nullptr) << "a partial output file was left";
  if (f) std::fclose(f);
}

// FORGE_SUBGROUPS=0 turns the kernels' subgroup sums off on every adapter
// `forge info` lists; without it, the device the suite runs on reports what
// its probe found.
TEST(WebGpuFaults, SubgroupSumsOffByTheEnvironment) {
  CliRun off = run_cli(std::string("FORGE_SUBGROUPS=0 ") + forge::testing::cli_path() + " info --json");
  ASSERT_EQ(off.code, 0) << off.out;
  size_t at = 0;
  int adapters = 0;
  while ((at = off.out.find("\"subgroup_sums\":", at)) != std::string::npos) {
    ++adapters;
    const size_t value = off.out.find_first_not_of(' ', at + 16);
    EXPECT_EQ(off.out.compare(value, 1, "0"), 0) << off.out;
    at = value;
  }
  EXPECT_GE(adapters, 1) << off.out;
  if (gpu_device().runtime().adapter().subgroup_size != 0) {
    CliRun on = run_cli(std::string(forge::testing::cli_path()) + " info --json");
    ASSERT_EQ(on.code, 0) << on.out;
    EXPECT_NE(on.out.find("\"subgroup_sums\": " + std::to_string(gpu_device().runtime().adapter().subgroup_size)),
              std::string::npos)
        << on.out;
  }
}

TEST(WebGpuFaults, BufferOverTheDeviceLimitNamesShapeAndSize) {
  const uint64_t max = gpu_device().runtime().limits().max_buffer;
  ASSERT_GT(max, 0u);
  const int64_t rows = int64_t(max / 4 / 1024) + 1;  // f32 [rows, 1024]: just over the limit
  try {
    Tensor t = Tensor::empty({rows, 1024}, DType::F32, gpu_device());
    ADD_FAILURE() << "allocated " << rows * 4096 << " bytes over a limit of " << max;
  } catch (const GpuError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("f32 [" + std::to_string(rows) + ", 1024]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(rows * 4096) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("maximum buffer size"), std::string::npos) << msg;
  }
  // Shapes whose byte count overflows are refused before any device call.
  EXPECT_THROW(Tensor::empty({int64_t(1) << 40, int64_t(1) << 40}, DType::F32, gpu_device()), ShapeError);
  // Smaller work goes on.
  Tensor s = add(Tensor::from_vector<float>({1, 2}, {2}, gpu_device()), Tensor::from_vector<float>({3, 4}, {2}, gpu_device()));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{4, 6}));
}

namespace {

// A device of the test's own, so that losing it leaves the suite's shared
// device alone: SwiftShader where it is installed (CI), else the GPU's.
std::shared_ptr<gpu::Runtime> private_runtime() {
  std::shared_ptr<gpu::Runtime> rt = gpu::create_runtime(gpu::AdapterPreference::Software);
  if (!rt) rt = gpu::create_runtime(gpu::AdapterPreference::Any);
  if (!rt) throw std::runtime_error("no WebGPU adapter");
  return rt;
}

}  // namespace

TEST(WebGpuFaults, LostDeviceIsAGpuErrorAtTheNextSyncNotAHang) {
  std::shared_ptr<gpu::Runtime> rt = private_runtime();
  Device dev(rt);
  Tensor a = random_tensor({64, 64}, 3).to(dev);
  EXPECT_TRUE(all_close(matmul(a, a).to(Device::cpu()), matmul(a.to(Device::cpu()), a.to(Device::cpu())), 1e-4, 1e-4));
  Tensor pending = matmul(a, a);  // recorded, not yet submitted
  static_cast<webgpu::DawnRuntime&>(*rt).lose_device_for_testing();
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)pending.to_vector<float>();
    ADD_FAILURE() << "a read back from a lost device succeeded";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("device was lost"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // Every later use says the same, without crashing.
  EXPECT_THROW((void)matmul(a, a).to_vector<float>(), GpuError);
  EXPECT_THROW(rt->sync(), GpuError);
  pending = Tensor();
  a = Tensor();
  // The process's own device is untouched.
  Tensor s = scale(Tensor::from_vector<float>({1, 2}, {2}, gpu_device()), 3.0f);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3, 6}));
}

TEST(WebGpuFaults, DeviceLostWhileWaitingEndsTheWaitWithAGpuError) {
  std::shared_ptr<gpu::Runtime> rt = private_runtime();
  Device dev(rt);
  Tensor a = random_tensor({192, 192}, 4).to(dev);
  (void)matmul(a, a).to_vector<float>();  // kernels compiled
  Tensor x = a;
  for (int i = 0; i < 6; ++i) x = matmul(x, a);  // tens of ms of work on SwiftShader
  std::thread loser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    static_cast<webgpu::DawnRuntime&>(*rt).lose_device_for_testing();
  });
  const auto start = std::chrono::steady_clock::now();
  bool raised = false;
  try {
    (void)x.to_vector<float>();
  } catch (const GpuError& e) {
    raised = true;
    EXPECT_NE(std::string(e.what()).find("device was lost"), std::string::npos) << e.what();
  }
  loser.join();
  // Finished before the loss: the next sync reports it instead.
  if (!raised) EXPECT_THROW(rt->sync(), GpuError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}
