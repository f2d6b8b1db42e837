// Reading files for the tokenizer loaders, with errors that name the file.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "forge/error.h"
#include "text/tokenizer_spec.h"

namespace forge::text {

std::string read_text_file(const std::filesystem::path& path, const std::string& component) {
  const std::string tag = std::string("[").append(component).append("]");
  const std::string who = tag + " '" + path.string() + "'";
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::directory) throw IoError(who + " is a folder, not a file");
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
    const bool terminal = fd >= 0 && ::isatty(fd);
    if (fd >= 0) ::close(fd);
    if (!terminal) throw IoError(who + " is a device, not a file of text");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(tag + " cannot read '" + path.string() + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw IoError("[tokenizer] '" + path.string() + "' is not valid JSON: " + e.what());
  }
}

std::uint32_t json_token_id(const nlohmann::json& j, const std::string& source, const std::string& what) {
  if (!j.is_number_unsigned())
    throw IoError("[tokenizer] " + source + ": " + what + " is not a non-negative integer: " + j.dump());
  const auto id = j.get<std::uint64_t>();
  if (id >= kMaxTokenIds)
    throw IoError("[tokenizer] " + source + ": " + what + " " + std::to_string(id) +
                  " is over the largest supported token id " + std::to_string(kMaxTokenIds - 1));
  return static_cast<std::uint32_t>(id);
}

}  // namespace forge::text
