// Typed access to the keys of a config.json object, with errors that name the key
// and the file. Missing keys and wrong JSON types are IoError; bad values ValueError.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace forge::io {

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& obj, std::string source, std::string scope = "")
      : obj_(obj), source_(std::move(source)), scope_(std::move(scope)) {}

  bool has(const char* key) const;  // present and not null
  const nlohmann::json& at(const char* key) const;  // throws when missing

  int64_t integer(const char* key) const;
  std::optional<int64_t> opt_integer(const char* key) const;
  // integer() that must be > 0 (ValueError otherwise).
  int64_t positive(const char* key) const;
  std::optional<int64_t> opt_positive(const char* key) const;
  double number(const char* key) const;
  std::optional<double> opt_number(const char* key) const;
  std::optional<bool> opt_boolean(const char* key) const;
  std::optional<std::string> opt_string(const char* key) const;

  // "'key'" or "'scope.key'" for messages.
  std::string name(const char* key) const;
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& obj_;
  std::string source_;
  std::string scope_;
};

}  // namespace forge::io
