// Writing safetensors files: header JSON padded to 8 bytes, tensors in name order,
// then an atomic replace of the destination.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "forge/error.h"
#include "forge/safetensors.h"

namespace forge {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps here");

std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorToWrite*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });

  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const TensorToWrite& t = *order[i];
    if (t.name == "__metadata__") throw ValueError("[safetensors] '__metadata__' cannot be a tensor name");
    if (i > 0 && order[i - 1]->name == t.name) throw ValueError("[safetensors] duplicate tensor name '" + t.name + "'");
    for (int64_t d : t.shape)
      if (d < 0) throw ValueError("[safetensors] tensor '" + t.name + "' has negative shape " + shape_str(t.shape));
    uint64_t expected = uint64_t(numel(t.shape)) * st_dtype_size(t.dtype);
    if (t.data.size() != expected)
      throw ValueError("[safetensors] tensor '" + t.name + "' " + shape_str(t.shape) + " of " +
                       st_dtype_name(t.dtype) + " needs " + std::to_string(expected) + " bytes, got " +
                       std::to_string(t.data.size()));
    header[t.name] = {{"dtype", st_dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }

  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts at 8 + text.size(), a multiple of 8
  std::vector<std::byte> out(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = std::byte((n >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::byte* data = out.data() + 8 + text.size();
  for (const TensorToWrite* t : order) {
    if (!t->data.empty()) std::memcpy(data, t->data.data(), t->data.size());
    data += t->data.size();
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_safetensors_bytes(path, serialize_safetensors(tensors, metadata));
}

void write_safetensors_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::filesystem::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return IoError("[safetensors] cannot write " + path.string() + ": " + what);
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw fail(std::string("cannot create ") + tmp.string() + ": " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fflush(f) == 0 && ok;
  ok = ::fsync(::fileno(f)) == 0 && ok;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw fail(std::string("write failed: ") + std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw fail("rename from " + tmp.string() + " failed: " + ec.message());
}

}  // namespace forge
