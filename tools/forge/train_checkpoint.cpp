// Writing, and after a crash finding, training checkpoint folders (see train_checkpoint.h).
#include "train_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "byte_tokenizer.h"
#include "forge/model_config.h"

namespace forge::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path sibling(const fs::path& dir, const char* suffix) { return fs::path(dir.string() + suffix); }

fs::path parent_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// fsync of a file or a folder (a folder: so the renames inside it last).
void sync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) throw IoError("[train] cannot open '" + p.string() + "' to sync it: " + std::strerror(errno));
  const int r = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (r != 0) throw IoError("[train] cannot sync '" + p.string() + "': " + std::strerror(err));
}

void write_file(const fs::path& p, const std::string& text) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) throw IoError("[train] cannot create '" + p.string() + "': " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fflush(f) == 0 && ok;
  ok = ::fsync(::fileno(f)) == 0 && ok;
  const int err = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw IoError("[train] cannot write '" + p.string() + "': " + std::strerror(err));
}

void fault_point(const char* name) {
  const char* v = std::getenv("FORGE_FAULT_KILL_AT");
  if (v && std::strcmp(v, name) == 0) std::raise(SIGKILL);
}

// The folder's checkpoint when train.json parses and every file it lists has its size.
std::optional<FoundCheckpoint> read_complete(const fs::path& d) {
  std::ifstream f(d / "train.json");
  if (!f) return std::nullopt;
  const json j = json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    for (const auto& [name, size] : j.at("files").items()) {
      std::error_code ec;
      if (fs::file_size(d / name, ec) != size.get<uintmax_t>() || ec) return std::nullopt;
    }
    return FoundCheckpoint{d, j.at("step").get<int64_t>(), j.at("settings"), ""};
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw IoError("[train] cannot rename '" + from.string() + "' to '" + to.string() + "': " + ec.message());
}

// Puts the complete folder `from` in the place of `dir`, keeping a complete
// folder on disk at every moment.
void swap_in(const fs::path& from, const fs::path& dir) {
  const fs::path old = sibling(dir, ".old");
  std::error_code ec;
  if (fs::exists(dir)) {
    fs::remove_all(old, ec);
    rename_or_throw(dir, old);
  }
  fault_point("checkpoint-aside");
  rename_or_throw(from, dir);
  sync_path(parent_of(dir));
  fs::remove_all(old, ec);
}

}  // namespace

void save_train_checkpoint(const fs::path& dir, const Gpt2& model, const Gpt2Trainer& trainer,
                           const CheckpointExtras& extras) {
  save_train_checkpoint(dir, trainer.steps_done(), extras, [&](const fs::path& tmp) {
    write_gpt2_checkpoint(tmp, model.config(), trainer.host_weights());
    if (extras.eos_token_id && *extras.eos_token_id != 50256) set_special_token_ids(tmp, *extras.eos_token_id);
    load_config(tmp);  // config.json is whole (a full disk can cut it short)
    write_gpt2_train_state(tmp, trainer);
  });
}

void save_train_checkpoint(const fs::path& dir, int64_t step, const CheckpointExtras& extras,
                           const std::function<void(const fs::path&)>& write) {
  const fs::path tmp = sibling(dir, ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    write(tmp);
    if (!extras.tokenizer_json.empty()) write_file(tmp / "tokenizer.json", extras.tokenizer_json);
    json files = json::object();
    for (const auto& e : fs::directory_iterator(tmp)) {
      sync_path(e.path());
      files[e.path().filename().string()] = fs::file_size(e.path());
    }
    const json marker = {{"format", "forge-train-checkpoint"},
                         {"step", step},
                         {"settings", extras.settings},
                         {"files", files}};
    write_file(tmp / "train.json", marker.dump(2) + "\n");
    sync_path(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fault_point("checkpoint-written");
  swap_in(tmp, dir);
}

std::optional<FoundCheckpoint> recover_train_checkpoint(const fs::path& dir) {
  const fs::path tmp = sibling(dir, ".tmp"), old = sibling(dir, ".old");
  std::optional<FoundCheckpoint> best = read_complete(dir);
  fs::path from = dir;
  for (const fs::path& p : {tmp, old}) {
    std::optional<FoundCheckpoint> c = read_complete(p);
    if (c && (!best || c->step > best->step)) best = std::move(c), from = p;
  }
  if (!best) return std::nullopt;
  std::error_code ec;
  if (from == tmp) {
    swap_in(tmp, dir);
  } else if (from == old) {
    fs::remove_all(dir, ec);
    fs::remove_all(tmp, ec);
    rename_or_throw(old, dir);
    sync_path(parent_of(dir));
  } else {
    fs::remove_all(tmp, ec);
    fs::remove_all(old, ec);
  }
  best->dir = dir;
  if (from != dir) best->recovered_from = from.filename().string();
  return best;
}

}  // namespace forge::cli
