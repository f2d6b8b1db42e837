// Guards the struct layouts declared in src/webgpu/dawn/webgpu_api.h against
// the Dawn library forge links: the library writes into these structs, so a
// declaration shorter than its own overruns the caller's memory.
#include <gtest/gtest.h>

#include <cstring>

#include "parity/parity.h"
#include "webgpu/dawn/dawn_runtime.h"

using namespace forge;

namespace {

constexpr unsigned char kGuard = 0xA5;

template <class T>
struct Guarded {
  T value;
  unsigned char guard[64];
  // The value is filled with 0x5A bytes so that members the library writes
  // are told apart from members it does not know.
  Guarded() {
    std::memset(static_cast<void*>(&value), 0x5A, sizeof(value));
    std::memset(guard, kGuard, sizeof(guard));
  }
  bool guard_intact() const {
    for (unsigned char c : guard)
      if (c != kGuard) return false;
    return true;
  }
};

webgpu::DawnRuntime& dawn() {
  auto* rt = dynamic_cast<webgpu::DawnRuntime*>(&forge::testing::gpu_device().runtime());
  if (!rt) throw Error("the test device is not the Dawn runtime");
  return *rt;
}

TEST(WebGpuLayout, LimitsStructMatchesTheLibrary) {
  Guarded<WGPULimits> limits;
  limits.value.nextInChain = nullptr;
  ASSERT_EQ(wgpuAdapterGetLimits(dawn().raw_adapter(), &limits.value), WGPUStatus_Success);
  EXPECT_TRUE(limits.guard_intact()) << "the library wrote past the end of WGPULimits";
  // The last member of the specification's layout is written. The four
  // members beyond it are reserved for builds that write them (seen with
  // some adapters, not with SwiftShader); the guard shows nothing lies past.
  EXPECT_NE(limits.value.maxImmediateSize, 0x5A5A5A5Au);
  EXPECT_NE(limits.value.maxComputeWorkgroupsPerDimension, 0x5A5A5A5Au);
  EXPECT_GT(limits.value.maxStorageBufferBindingSize, 0u);
  EXPECT_GE(limits.value.maxComputeInvocationsPerWorkgroup, 256u);
  EXPECT_EQ(sizeof(WGPULimits), 168u);
}

TEST(WebGpuLayout, AdapterInfoStructMatchesTheLibrary) {
  Guarded<WGPUAdapterInfo> info;
  info.value.nextInChain = nullptr;
  ASSERT_EQ(wgpuAdapterGetInfo(dawn().raw_adapter(), &info.value), WGPUStatus_Success);
  EXPECT_TRUE(info.guard_intact()) << "the library wrote past the end of WGPUAdapterInfo";
  EXPECT_GT(info.value.device.length, 0u);
  EXPECT_NE(info.value.subgroupMaxSize, 0x5A5A5A5Au);  // the last member is written
  EXPECT_EQ(info.value.backendType, WGPUBackendType_Vulkan);
  wgpuAdapterInfoFreeMembers(info.value);
}

TEST(WebGpuLayout, DescriptorSizes) {
  // Sizes of the descriptors forge passes in, per the specification's member lists.
  EXPECT_EQ(sizeof(WGPUStringView), 16u);
  EXPECT_EQ(sizeof(WGPUBufferDescriptor), 48u);
  EXPECT_EQ(sizeof(WGPUBindGroupEntry), 56u);
  EXPECT_EQ(sizeof(WGPUComputeState), 48u);
  EXPECT_EQ(sizeof(WGPURequestDeviceCallbackInfo), 40u);
  EXPECT_EQ(sizeof(WGPUDeviceDescriptor), 144u);
}

}  // namespace
