// RAII ownership of webgpu.h handles: each wrapper releases its handle once.
#pragma once
#include <utility>

#include "webgpu/dawn/webgpu_api.h"

namespace forge::webgpu {

template <class T, void (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (h_) Release(h_);
    h_ = nullptr;
  }
  T get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};

using InstanceHandle = Handle<WGPUInstance, wgpuInstanceRelease>;
using AdapterHandle = Handle<WGPUAdapter, wgpuAdapterRelease>;
using DeviceHandle = Handle<WGPUDevice, wgpuDeviceRelease>;
using QueueHandle = Handle<WGPUQueue, wgpuQueueRelease>;
using BufferHandle = Handle<WGPUBuffer, wgpuBufferRelease>;
using ShaderModuleHandle = Handle<WGPUShaderModule, wgpuShaderModuleRelease>;
using ComputePipelineHandle = Handle<WGPUComputePipeline, wgpuComputePipelineRelease>;
using BindGroupLayoutHandle = Handle<WGPUBindGroupLayout, wgpuBindGroupLayoutRelease>;
using BindGroupHandle = Handle<WGPUBindGroup, wgpuBindGroupRelease>;
using PipelineLayoutHandle = Handle<WGPUPipelineLayout, wgpuPipelineLayoutRelease>;
using CommandEncoderHandle = Handle<WGPUCommandEncoder, wgpuCommandEncoderRelease>;
using ComputePassHandle = Handle<WGPUComputePassEncoder, wgpuComputePassEncoderRelease>;
using CommandBufferHandle = Handle<WGPUCommandBuffer, wgpuCommandBufferRelease>;
using QuerySetHandle = Handle<WGPUQuerySet, wgpuQuerySetRelease>;

inline WGPUStringView view(std::string_view s) { return WGPUStringView{s.data(), s.size()}; }
inline std::string to_string(WGPUStringView s) {
  if (!s.data) return {};
  return s.length == WGPU_STRLEN ? std::string(s.data) : std::string(s.data, s.length);
}

}  // namespace forge::webgpu
