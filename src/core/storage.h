// Tensor storage: bytes on the host, or a buffer on a WebGPU device.
#pragma once
#include <cstddef>
#include <memory>
#include <variant>

#include "forge/device.h"
#include "gpu/runtime.h"

namespace forge {

struct HostBytes {
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], Free> bytes;  // 64-byte aligned
  size_t size = 0;
};

struct Storage {
  Device device;
  std::variant<HostBytes, std::shared_ptr<gpu::Buffer>> data;

  static std::shared_ptr<Storage> allocate(const Device& device, size_t bytes);
};

}  // namespace forge
