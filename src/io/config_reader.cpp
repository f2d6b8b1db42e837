#include "io/config_reader.h"

#include <cmath>

#include "forge/error.h"

namespace forge::io {

std::string ConfigReader::name(const char* key) const {
  return "'" + (scope_.empty() ? std::string(key) : scope_ + "." + key) + "'";
}

bool ConfigReader::has(const char* key) const {
  auto it = obj_.find(key);
  return it != obj_.end() && !it->is_null();
}

const nlohmann::json& ConfigReader::at(const char* key) const {
  if (!has(key)) throw IoError("[config] missing required key " + name(key) + " in " + source_);
  return obj_.at(key);
}

int64_t ConfigReader::integer(const char* key) const {
  const auto& v = at(key);
  if (!v.is_number_integer())
    throw IoError("[config] " + name(key) + " is " + v.dump() + ", expected an integer in " + source_);
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw ValueError("[config] " + name(key) + " = " + v.dump() + " is too large in " + source_);
  return v.get<int64_t>();
}

std::optional<int64_t> ConfigReader::opt_integer(const char* key) const {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

int64_t ConfigReader::positive(const char* key) const {
  int64_t v = integer(key);
  if (v <= 0) throw ValueError("[config] " + name(key) + " = " + std::to_string(v) + " must be positive in " + source_);
  return v;
}

std::optional<int64_t> ConfigReader::opt_positive(const char* key) const {
  if (!has(key)) return std::nullopt;
  return positive(key);
}

double ConfigReader::number(const char* key) const {
  const auto& v = at(key);
  if (!v.is_number()) throw IoError("[config] " + name(key) + " is " + v.dump() + ", expected a number in " + source_);
  double d = v.get<double>();
  if (!std::isfinite(d)) throw ValueError("[config] " + name(key) + " is not finite in " + source_);
  return d;
}

std::optional<double> ConfigReader::opt_number(const char* key) const {
  if (!has(key)) return std::nullopt;
  return number(key);
}

std::optional<bool> ConfigReader::opt_boolean(const char* key) const {
  if (!has(key)) return std::nullopt;
  const auto& v = obj_.at(key);
  if (!v.is_boolean()) throw IoError("[config] " + name(key) + " is " + v.dump() + ", expected true or false in " + source_);
  return v.get<bool>();
}

std::optional<std::string> ConfigReader::opt_string(const char* key) const {
  if (!has(key)) return std::nullopt;
  const auto& v = obj_.at(key);
  if (!v.is_string()) throw IoError("[config] " + name(key) + " is " + v.dump() + ", expected a string in " + source_);
  return v.get<std::string>();
}

}  // namespace forge::io
