// SafetensorsFile: owns the bytes (a mapping or a buffer) and the parsed header.
#include <optional>

#include "forge/error.h"
#include "forge/safetensors.h"
#include "io/mapped_file.h"

namespace forge {

struct SafetensorsFile::Storage {
  std::unique_ptr<io::MappedFile> mapped;  // set for open()
  std::vector<std::byte> buffer;           // used by from_bytes()
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

void SafetensorsFile::build_index() {
  index_.reserve(header_.tensors.size());
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

TensorView SafetensorsFile::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw IoError("[safetensors] no tensor '" + name + "' in " + *origin_);
  return view(header_.tensors[it->second]);
}

TensorView SafetensorsFile::view(const TensorInfo& info) const {
  const TensorInfo* first = header_.tensors.data();
  if (&info < first || &info >= first + header_.tensors.size())
    throw ValueError("[safetensors] view() of tensor '" + info.name + "', an entry that is not from " + *origin_);
  auto all = storage_->bytes();
  return TensorView{&info, all.subspan(size_t(header_.data_start + info.begin), size_t(info.nbytes())),
                    origin_.get()};
}

}  // namespace forge
