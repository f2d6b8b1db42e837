// Reading files for the tokenizer loaders, with errors that name the file.
#include <fstream>
#include <sstream>

#include "forge/error.h"
#include "text/tokenizer_spec.h"

namespace forge::text {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("[tokenizer] cannot read '" + path.string() + "'");
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
