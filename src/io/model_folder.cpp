// Model folders written whole or not at all (model_folder.h).
#include "io/model_folder.h"

#include <unistd.h>

#include <fstream>

#include "forge/error.h"

namespace forge::io {

namespace fs = std::filesystem;

const std::vector<std::string>& model_side_files() {
  static const std::vector<std::string> files = {"generation_config.json", "tokenizer.json", "tokenizer_config.json",
                                                 "special_tokens_map.json", "vocab.json", "merges.txt",
                                                 "chat_template.jinja", "tokenizer.model"};
  return files;
}

void copy_model_side_files(const fs::path& src, const fs::path& dst) {
  std::error_code ec;
  if (fs::equivalent(src, dst, ec)) return;
  for (const std::string& f : model_side_files())
    if (fs::is_regular_file(src / f)) fs::copy_file(src / f, dst / f, fs::copy_options::overwrite_existing);
}

void write_text_file(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw IoError("[io] cannot write '" + path.string() + "' (disk full or not writable)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw IoError("[io] cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
}

void check_folder_destination(const fs::path& dst) {
  std::error_code ec;
  const fs::path full = fs::absolute(dst, ec).lexically_normal();
  for (fs::path p = full; !ec && p.has_relative_path(); p = p.parent_path()) {
    const fs::file_status st = fs::status(p, ec);
    if (st.type() == fs::file_type::not_found) {  // "a/b" under a file "a" reads so too (ENOTDIR)
      ec.clear();
      continue;
    }
    if (!ec && !fs::is_directory(st))
      throw IoError(p == full ? "[io] '" + dst.string() + "' is a file, not a folder"
                              : "[io] '" + p.string() + "' is a file, not a folder (in the output path '" +
                                    dst.string() + "')");
    return;  // a folder (or a path the writer will report on)
  }
}

void check_file_destination(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw IoError("[io] '" + path.string() + "' is a folder; give a file name");
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  check_folder_destination(parent);
  if (!fs::is_directory(parent, ec))
    throw IoError("[io] the folder '" + parent.string() + "' of '" + path.string() + "' does not exist");
}

fs::path write_folder(const fs::path& dst_in, const std::function<void(const fs::path& tmp)>& fill) {
  const fs::path dst = dst_in.has_filename() ? dst_in : dst_in.parent_path();  // "out/" -> "out"
  check_folder_destination(dst);
  const fs::path parent = dst.has_parent_path() ? dst.parent_path() : fs::path(".");
  fs::create_directories(parent);
  fs::path tmp = parent / dst.filename();
  tmp += ".partial-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    fill(tmp);
    if (!fs::exists(dst)) {
      fs::rename(tmp, dst);
      return dst;
    }
    for (const fs::directory_entry& e : fs::directory_iterator(tmp)) fs::rename(e.path(), dst / e.path().filename());
    fs::remove(tmp);
    return dst;
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace forge::io
