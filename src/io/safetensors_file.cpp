// SafetensorsFile: owns the bytes (a mapping, a buffer, or a reader that
// fetches each tensor's bytes when asked) and the parsed header.
#include <algorithm>
#include <optional>

#include "forge/error.h"
#include "forge/safetensors.h"
#include "io/mapped_file.h"

namespace forge {

struct SafetensorsFile::Storage {
  std::unique_ptr<io::MappedFile> mapped;  // set for open()
  std::vector<std::byte> buffer;           // used by from_bytes()
  ByteSource source;                       // set for from_source(): nothing held
  std::span<const std::byte> bytes() const {
    return mapped ? mapped->bytes() : std::span<const std::byte>(buffer);
  }
};

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  auto storage = std::make_shared<Storage>();
  storage->mapped = std::make_unique<io::MappedFile>(path, "safetensors");
  SafetensorsFile f;
  f.origin_ = std::make_unique<std::string>(path.string());
  f.header_ = parse_safetensors_header(storage->bytes(), *f.origin_);
  f.storage_ = std::move(storage);
  f.build_index();
  return f;
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<std::byte> bytes, const std::string& origin) {
  auto storage = std::make_shared<Storage>();
  storage->buffer = std::move(bytes);
  SafetensorsFile f;
  f.origin_ = std::make_unique<std::string>(origin);
  f.header_ = parse_safetensors_header(storage->bytes(), *f.origin_);
  f.storage_ = std::move(storage);
  f.build_index();
  return f;
}

SafetensorsFile SafetensorsFile::from_source(ByteSource source, const std::string& origin) {
  if (!source.read) throw ValueError("[safetensors] from_source of " + origin + " without a reader");
  // The 8-byte length, then the header it gives (bounded by the parser's limit).
  std::vector<std::byte> head(size_t(std::min<uint64_t>(source.size, 8)));
  source.read(0, head);
  if (head.size() == 8) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | uint64_t(head[size_t(i)]);
    if (n <= kMaxSafetensorsHeader && n <= source.size - 8) {
      head.resize(size_t(8 + n));
      source.read(8, std::span<std::byte>(head).subspan(8));
    }
  }
  auto storage = std::make_shared<Storage>();
  SafetensorsFile f;
  f.origin_ = std::make_unique<std::string>(origin);
  f.header_ = parse_safetensors_header(head, source.size, *f.origin_);
  storage->source = std::move(source);
  f.storage_ = std::move(storage);
  f.build_index();
  return f;
}

void SafetensorsFile::build_index() {
  index_.reserve(header_.tensors.size());
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw IoError("[safetensors] no tensor '" + name + "' in " + *origin_);
  return header_.tensors[it->second];
}

TensorView SafetensorsFile::get(const std::string& name) const { return view(info(name)); }

TensorView SafetensorsFile::view(const TensorInfo& info) const {
  const TensorInfo* first = header_.tensors.data();
  if (&info < first || &info >= first + header_.tensors.size())
    throw ValueError("[safetensors] view() of tensor '" + info.name + "', an entry that is not from " + *origin_);
  if (storage_->source.read) {
    auto owned = std::make_shared<std::vector<std::byte>>(size_t(info.nbytes()));
    storage_->source.read(header_.data_start + info.begin, *owned);
    return TensorView{&info, *owned, origin_.get(), std::move(owned)};
  }
  auto all = storage_->bytes();
  return TensorView{&info, all.subspan(size_t(header_.data_start + info.begin), size_t(info.nbytes())),
                    origin_.get(), nullptr};
}

}  // namespace forge
