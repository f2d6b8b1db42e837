// Parsing and validation of a safetensors header from the file's bytes. Works on
// a byte span so the same code serves mapped files, buffers and the fuzz target.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "forge/error.h"
#include "forge/safetensors.h"
#include "io/json_strict.h"

namespace forge {

namespace {

using json = nlohmann::json;

struct HeaderParser {
  const std::string& origin;

  IoError fail(const std::string& what) const { return IoError("[safetensors] " + what + " in " + origin); }

  static std::string quoted(const std::string& s) { return "'" + s + "'"; }

  uint64_t non_negative_int(const json& v, const std::string& tensor, const char* field) const {
    if (!v.is_number_integer())
      throw fail("tensor " + quoted(tensor) + " " + field + " holds " + v.dump() + ", not an integer");
    if (!v.is_number_unsigned())
      throw fail("tensor " + quoted(tensor) + " " + field + " holds negative value " + v.dump());
    return v.get<uint64_t>();
  }

  const json& field(const json& entry, const std::string& tensor, const char* key) const {
    auto it = entry.find(key);
    if (it == entry.end()) throw fail("tensor " + quoted(tensor) + " has no \"" + key + "\"");
    return *it;
  }

  TensorInfo entry(const std::string& name, const json& e) const {
    if (!e.is_object()) throw fail("tensor " + quoted(name) + " entry is a " + e.type_name() + ", not an object");
    TensorInfo t;
    t.name = name;

    const json& dt = field(e, name, "dtype");
    if (!dt.is_string()) throw fail("tensor " + quoted(name) + " dtype is " + dt.dump() + ", not a string");
    auto parsed = st_dtype_from_name(dt.get<std::string>());
    if (!parsed) throw fail("tensor " + quoted(name) + " has unknown dtype " + dt.dump());
    t.dtype = *parsed;

    const json& shape = field(e, name, "shape");
    if (!shape.is_array()) throw fail("tensor " + quoted(name) + " shape is " + shape.dump() + ", not an array");
    uint64_t count = 1;
    bool overflow = false;
    for (const json& d : shape) {
      uint64_t extent = non_negative_int(d, name, "shape");
      if (extent > uint64_t(INT64_MAX)) throw fail("tensor " + quoted(name) + " shape extent " + d.dump() + " too large");
      // Every partial product must fit int64_t too, so forge::numel() of an accepted shape cannot overflow.
      overflow |= __builtin_mul_overflow(count, extent, &count) || count > uint64_t(INT64_MAX);
      t.shape.push_back(int64_t(extent));
    }

    const json& off = field(e, name, "data_offsets");
    if (!off.is_array() || off.size() != 2)
      throw fail("tensor " + quoted(name) + " data_offsets is " + off.dump() + ", not [begin, end]");
    t.begin = non_negative_int(off[0], name, "data_offsets");
    t.end = non_negative_int(off[1], name, "data_offsets");
    if (t.end < t.begin)
      throw fail("tensor " + quoted(name) + " data_offsets [" + std::to_string(t.begin) + ", " +
                 std::to_string(t.end) + "] end before begin");

    uint64_t bytes = 0;
    overflow |= __builtin_mul_overflow(count, uint64_t(st_dtype_size(t.dtype)), &bytes);
    if (overflow || bytes != t.nbytes())
      throw fail("tensor " + quoted(name) + " shape " + shape_str(t.shape) + " of " + st_dtype_name(t.dtype) +
                 " needs " + (overflow ? std::string("more than 2^64") : std::to_string(bytes)) +
                 " bytes but data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "] hold " +
                 std::to_string(t.nbytes()));
    return t;
  }

  std::map<std::string, std::string> metadata(const json& m) const {
    std::map<std::string, std::string> out;
    if (m.is_null()) return out;
    if (!m.is_object()) throw fail("__metadata__ is a " + std::string(m.type_name()) + ", not an object");
    for (const auto& [k, v] : m.items()) {
      if (!v.is_string()) throw fail("__metadata__ value for " + quoted(k) + " is " + v.dump() + ", not a string");
      out[k] = v.get<std::string>();
    }
    return out;
  }

  // The tensors must tile the data section [0, data_size) exactly.
  void check_layout(std::vector<TensorInfo>& tensors, uint64_t data_size) const {
    std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    auto range = [](const TensorInfo& t) {
      return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    };
    uint64_t covered = 0;
    const TensorInfo* prev = nullptr;
    for (const TensorInfo& t : tensors) {
      if (t.begin < covered)
        throw fail("tensor " + quoted(t.name) + " data_offsets " + range(t) + " overlap tensor " +
                   quoted(prev->name) + " " + range(*prev));
      if (t.begin > covered)
        throw fail("gap in the data section: bytes [" + std::to_string(covered) + ", " + std::to_string(t.begin) +
                   ") belong to no tensor (next is " + quoted(t.name) + ")");
      covered = t.end;
      prev = &t;
    }
    if (covered > data_size)
      throw fail("file truncated: tensor " + quoted(prev->name) + " ends at data offset " + std::to_string(covered) +
                 " but the data section has " + std::to_string(data_size) + " bytes");
    if (covered < data_size)
      throw fail("data section has " + std::to_string(data_size) + " bytes but the tensors cover only " +
                 std::to_string(covered));
  }
};

}  // namespace

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file, const std::string& origin) {
  return parse_safetensors_header(file, file.size(), origin);
}

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> head, uint64_t file_size,
                                           const std::string& origin) {
  HeaderParser p{origin};
  if (file_size < 8 || head.size() < 8)
    throw p.fail("file is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint64_t(head[size_t(i)]);
  if (n > kMaxSafetensorsHeader)
    throw p.fail("header length " + std::to_string(n) + " exceeds the limit of " +
                 std::to_string(kMaxSafetensorsHeader) + " bytes");
  if (n > file_size - 8)
    throw p.fail("header length " + std::to_string(n) + " exceeds the file size " + std::to_string(file_size));
  if (n > head.size() - 8)
    throw p.fail("header length " + std::to_string(n) + " exceeds the " + std::to_string(head.size() - 8) +
                 " header bytes read");

  std::string_view text(reinterpret_cast<const char*>(head.data() + 8), size_t(n));
  json j = io::parse_json_strict(text, "safetensors", origin);
  if (!j.is_object()) throw p.fail("header is a JSON " + std::string(j.type_name()) + ", not an object");

  SafetensorsHeader h;
  h.data_start = 8 + n;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__")
      h.metadata = p.metadata(value);
    else
      h.tensors.push_back(p.entry(key, value));
  }
  p.check_layout(h.tensors, file_size - h.data_start);
  return h;
}

}  // namespace forge
