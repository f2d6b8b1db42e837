// safetensors checkpoints: read (memory-mapped or piece by piece, lazy), write (atomic), and
// sharded model directories (model.safetensors.index.json).
//
// File layout: [u64 little-endian N][N bytes of JSON header][data section].
// The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the data section) plus an optional "__metadata__" string map.
// The tensors must cover the data section exactly: no gaps, no overlaps.
//
// Every malformed file is refused with forge::IoError naming the file and the problem:
//   "[safetensors] tensor 'a' data_offsets [0, 12] overlap tensor 'b' [8, 16] in m.safetensors"
//
// Threads: an open SafetensorsFile and its TensorViews are read-only and may
// be read from several threads at once. Writes of distinct paths may run at
// once; two writes of one path race on its temporary file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "forge/dtype.h"
#include "forge/shape.h"

namespace forge {

// ---------------------------------------------------------------------------
// Element types as the file format names them. A superset of forge::DType:
// every one parses; only those with a forge::DType convert.
enum class StDType : uint8_t {
  BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64
};

// Bytes per element.
size_t st_dtype_size(StDType t);
// The name used in the header: "F32", "BF16", "F8_E4M3", ...
const char* st_dtype_name(StDType t);
// Inverse of st_dtype_name; nullopt for a name the format does not define.
std::optional<StDType> st_dtype_from_name(std::string_view name);
// The forge::DType with the same encoding, or nullopt (F64, I8, BOOL, F8_*, ...).
std::optional<DType> to_dtype(StDType t);
StDType from_dtype(DType t);

// ---------------------------------------------------------------------------
// One tensor entry of a header.
struct TensorInfo {
  std::string name;
  StDType dtype = StDType::F32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data section, begin <= end
  uint64_t end = 0;
  uint64_t nbytes() const { return end - begin; }
};

// A parsed and validated header.
struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in data order (ascending begin)
  std::map<std::string, std::string> metadata;  // "__metadata__", empty when absent
  uint64_t data_start = 0;  // file offset of the data section: 8 + header length
};

// Largest header accepted (the format's reference reader uses the same bound).
inline constexpr uint64_t kMaxSafetensorsHeader = 100u << 20;

// Parses and validates the header of a complete file held in `file`. Checks the
// header length, the JSON (object, no duplicate keys), each entry's dtype, shape
// and offsets against each other and against the file size. `origin` names the
// file in error messages. Throws IoError.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file, const std::string& origin);
// The same from the file's first bytes alone: `head` holds at least the
// 8-byte length and the header it gives; `file_size` is the whole file's.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> head, uint64_t file_size,
                                           const std::string& origin);

// ---------------------------------------------------------------------------
// A tensor inside an open file: its entry and its bytes (a span into the mapping,
// valid while the file that produced it is alive; for a file read piece by
// piece, a copy the view owns).
struct TensorView {
  const TensorInfo* info = nullptr;
  std::span<const std::byte> bytes;
  const std::string* origin = nullptr;  // file name for messages
  // Holds `bytes` for a file read piece by piece (SafetensorsFile::from_source);
  // null for a mapped or in-memory file.
  std::shared_ptr<const std::vector<std::byte>> owned;

  const std::string& name() const { return info->name; }
  StDType dtype() const { return info->dtype; }
  const Shape& shape() const { return info->shape; }
  int64_t numel() const;

  // Element values as f32, for F32, F16, BF16, I32, I64, U32 and U8 (integers are
  // converted by value). Other dtypes throw DTypeError:
  //   "[safetensors] unsupported dtype F64 for tensor 'x' in FILE".
  std::vector<float> to_f32() const;
  // Same into a caller buffer of exactly numel() floats (ShapeError otherwise).
  void to_f32(std::span<float> out) const;
};

// ---------------------------------------------------------------------------
// A file read piece by piece instead of mapped (the browser's Blobs): its size
// and a reader of `out.size()` bytes at `offset` (both within the file).
struct ByteSource {
  uint64_t size = 0;
  std::function<void(uint64_t offset, std::span<std::byte> out)> read;
};

// ---------------------------------------------------------------------------
// An open safetensors file. Opening maps the file and parses the header; tensor
// bytes are only touched when a caller reads them. Movable, not copyable.
class SafetensorsFile {
 public:
  // Memory-maps `path`. Throws IoError when missing, unreadable or malformed.
  static SafetensorsFile open(const std::filesystem::path& path);
  // Parses a file held in memory (tests, fuzzing). `origin` names it in messages.
  static SafetensorsFile from_bytes(std::vector<std::byte> bytes, const std::string& origin);
  // Reads the header from `source` now and each tensor's bytes when it is
  // asked for (get, view): a TensorView then owns a copy of its tensor alone,
  // so loading a model one tensor at a time never holds the whole file.
  static SafetensorsFile from_source(ByteSource source, const std::string& origin);

  const std::string& origin() const { return *origin_; }
  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Throws IoError "[safetensors] no tensor 'x' in FILE".
  TensorView get(const std::string& name) const;
  // The entry alone, without touching the bytes (IoError as get).
  const TensorInfo& info(const std::string& name) const;
  // `info` must be an element of tensors() (ValueError otherwise).
  TensorView view(const TensorInfo& info) const;

  struct Storage;  // the mapping or buffer that holds the bytes

 private:
  SafetensorsFile() = default;
  void build_index();

  std::shared_ptr<const Storage> storage_;
  std::unique_ptr<std::string> origin_;  // stable address for TensorView::origin
  SafetensorsHeader header_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in header_.tensors
};

// ---------------------------------------------------------------------------
// Writing. The tensors are written sorted by name with ascending offsets; the
// header is padded with spaces so the data section starts 8-byte aligned. The file
// is written beside `path` under a temporary name and renamed over it, so a crash
// leaves either the old file or the complete new one.
struct TensorToWrite {
  std::string name;
  StDType dtype = StDType::F32;
  Shape shape;
  std::span<const std::byte> data;  // numel(shape) * st_dtype_size(dtype) bytes, little-endian
};

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// The bytes write_safetensors would put in the file.
std::vector<std::byte> serialize_safetensors(const std::vector<TensorToWrite>& tensors,
                                             const std::map<std::string, std::string>& metadata = {});
// A whole file's bytes (serialize_safetensors's, or a checkpoint built in
// memory) written as write_safetensors writes them: under a temporary name
// beside `path`, synced, then renamed over it.
void write_safetensors_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes);

// ---------------------------------------------------------------------------
// How a checkpoint finds and opens its .safetensors files: on the file system,
// mapped (on_disk), unless a caller holds them elsewhere (the browser build
// reads the page's Blobs through SafetensorsFile::from_source).
struct SafetensorsFiles {
  std::function<bool(const std::filesystem::path&)> exists;
  std::function<SafetensorsFile(const std::filesystem::path&)> open;
  static SafetensorsFiles on_disk();
};

// ---------------------------------------------------------------------------
// A model's weights: one model.safetensors or shards listed by
// model.safetensors.index.json ({"weight_map": {tensor name: shard file}}).
class Checkpoint {
 public:
  // `path` is a .safetensors file, an index .json file or a directory holding
  // model.safetensors.index.json or model.safetensors. Shards are opened (mapped,
  // headers parsed) up front; a tensor the index lists but its shard lacks is an IoError.
  // The .safetensors files are found and opened through `files`.
  static Checkpoint open(const std::filesystem::path& path, const SafetensorsFiles& files = SafetensorsFiles::on_disk());

  const std::filesystem::path& path() const { return path_; }
  // Sorted tensor names.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  // Throws IoError "[checkpoint] no tensor 'x' in DIR".
  TensorView get(const std::string& name) const;
  // The entry alone, without reading the tensor's bytes.
  const TensorInfo& info(const std::string& name) const;
  // Every tensor's entry, in name order.
  std::vector<TensorInfo> tensors() const;
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  // The index's "metadata" (values as JSON text when not strings), else the single
  // file's __metadata__.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  Checkpoint() = default;
  std::filesystem::path path_;
  std::vector<SafetensorsFile> shards_;
  std::unordered_map<std::string, size_t> where_;  // tensor name -> shard
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace forge
