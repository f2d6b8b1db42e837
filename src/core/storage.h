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
    Free() noexcept : bytes(0) {}
    explicit Free(size_t n) noexcept : bytes(n) {}
    size_t bytes;  // as allocated (allocate_host_bytes)
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], Free> bytes;  // 64-byte aligned
  size_t size = 0;
};

struct Storage {
  Device device;
  std::variant<HostBytes, std::shared_ptr<gpu::Buffer>> data;
  uint64_t bytes = 0;  // as asked for (buffers may be larger)
  // Set once the bytes were moved into another storage (a flat training
  // buffer, Tensor::move_storage_into): they live in `home` from its byte
  // `base` on and `data` is released. A home may move in turn: the chain
  // ends at the storage holding the bytes.
  std::shared_ptr<Storage> home;
  uint64_t base = 0;
  // The storage at the end of the chain, and this one's byte offset in it.
  const Storage& holder() const { return home ? home->holder() : *this; }
  uint64_t offset_in_holder() const { return home ? base + home->offset_in_holder() : 0; }

  static std::shared_ptr<Storage> allocate(const Device& device, size_t bytes);
};

}  // namespace forge
