// Helpers shared by the safetensors and config tests: a temporary directory and
// hand-built files.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace forge::testing {

// A fresh directory removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "forge-io-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& p, const void* data, size_t n) {
  std::ofstream out(p, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(n));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}
inline void write_file(const std::filesystem::path& p, const std::vector<std::byte>& b) {
  write_file(p, b.data(), b.size());
}
inline void write_file(const std::filesystem::path& p, const std::string& s) { write_file(p, s.data(), s.size()); }

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// [u64 LE header length][header][data_bytes bytes of value fill].
inline std::vector<std::byte> raw_file(const std::string& header, size_t data_bytes, uint64_t length_field,
                                       uint8_t fill = 0) {
  std::vector<std::byte> out(8 + header.size() + data_bytes, std::byte{fill});
  for (int i = 0; i < 8; ++i) out[size_t(i)] = std::byte((length_field >> (8 * i)) & 0xff);
  for (size_t i = 0; i < header.size(); ++i) out[8 + i] = std::byte(header[i]);
  return out;
}
inline std::vector<std::byte> raw_file(const std::string& header, size_t data_bytes) {
  return raw_file(header, data_bytes, header.size());
}

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

}  // namespace forge::testing
