// Tensors built on the host (random weights, quantized copies) before they
// are serialized as safetensors.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "forge/safetensors.h"

namespace forge::models {

class OwnedTensors {
 public:
  // Copies `bytes` bytes of `data` as tensor `name`.
  void put(std::string name, StDType dtype, Shape shape, const void* data, size_t bytes) {
    Entry e{std::move(name), dtype, std::move(shape), std::vector<std::byte>(bytes)};
    std::memcpy(e.bytes.data(), data, bytes);
    entries_.push_back(std::move(e));
  }
  // Views for write_safetensors / serialize_safetensors (valid while this lives).
  std::vector<TensorToWrite> views() const {
    std::vector<TensorToWrite> out;
    for (const Entry& e : entries_) out.push_back({e.name, e.dtype, e.shape, e.bytes});
    return out;
  }

 private:
  struct Entry {
    std::string name;
    StDType dtype;
    Shape shape;
    std::vector<std::byte> bytes;
  };
  std::vector<Entry> entries_;
};

}  // namespace forge::models
