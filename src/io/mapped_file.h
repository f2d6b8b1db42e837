// A read-only memory mapping of a whole file: the thin OS layer under the
// safetensors reader. Pages are read from disk when first touched.
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace forge::io {

class MappedFile {
 public:
  // Throws IoError "[<component>] cannot open FILE: <reason>".
  MappedFile(const std::filesystem::path& path, const std::string& component);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr_), size_}; }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace forge::io
