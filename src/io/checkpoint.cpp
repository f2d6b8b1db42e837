// Checkpoint: a model's tensors across one file or the shards of an index.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "forge/error.h"
#include "forge/safetensors.h"
#include "io/json_strict.h"

namespace forge {

namespace fs = std::filesystem;

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw IoError("[checkpoint] cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

SafetensorsFiles SafetensorsFiles::on_disk() {
  return {[](const fs::path& p) { return fs::exists(p); }, SafetensorsFile::open};
}

Checkpoint Checkpoint::open(const fs::path& path, const SafetensorsFiles& files) {
  if (!fs::exists(path) && !files.exists(path)) throw IoError("[checkpoint] " + path.string() + " does not exist");
  Checkpoint c;
  c.path_ = path;
  fs::path index_path;
  if (fs::is_directory(path)) {
    if (fs::exists(path / kIndexName))
      index_path = path / kIndexName;
    else if (files.exists(path / kSingleName))
      c.shards_.push_back(files.open(path / kSingleName));
    else
      throw IoError("[checkpoint] " + path.string() + " holds neither " + kIndexName + " nor " + kSingleName);
  } else if (path.extension() == ".json") {
    index_path = path;
  } else {
    c.shards_.push_back(files.open(path));
  }

  if (index_path.empty()) {
    const SafetensorsFile& f = c.shards_.front();
    for (const TensorInfo& t : f.tensors()) c.where_.emplace(t.name, 0);
    c.metadata_ = f.metadata();
  } else {
    const std::string origin = index_path.string();
    nlohmann::json index = io::parse_json_strict(read_text(index_path), "checkpoint", origin);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw IoError("[checkpoint] " + origin + " has no \"weight_map\" object");
    if (index.contains("metadata") && index["metadata"].is_object())
      for (const auto& [k, v] : index["metadata"].items())
        c.metadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();

    std::map<std::string, size_t> shard_of_file;
    for (const auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string())
        throw IoError("[checkpoint] weight_map entry for '" + name + "' is " + file.dump() + ", not a file name in " +
                      origin);
      std::string shard = file.get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
        throw IoError("[checkpoint] weight_map entry for '" + name + "' names '" + shard +
                      "', not a file beside the index, in " + origin);
      auto [it, fresh] = shard_of_file.emplace(shard, c.shards_.size());
      if (fresh) c.shards_.push_back(files.open(index_path.parent_path() / shard));
      if (!c.shards_[it->second].contains(name))
        throw IoError("[checkpoint] tensor '" + name + "' is listed in " + origin + " but missing from shard " +
                      c.shards_[it->second].origin());
      c.where_.emplace(name, it->second);
    }
  }
  for (const auto& [name, shard] : c.where_) c.names_.push_back(name);
  std::sort(c.names_.begin(), c.names_.end());
  return c;
}

TensorView Checkpoint::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw IoError("[checkpoint] no tensor '" + name + "' in " + path_.string());
  return shards_[it->second].get(name);
}

const TensorInfo& Checkpoint::info(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw IoError("[checkpoint] no tensor '" + name + "' in " + path_.string());
  return shards_[it->second].info(name);
}

std::vector<TensorInfo> Checkpoint::tensors() const {
  std::vector<TensorInfo> out;
  out.reserve(names_.size());
  for (const std::string& n : names_) out.push_back(info(n));
  return out;
}

}  // namespace forge
