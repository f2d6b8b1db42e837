// JSON parsing that refuses duplicate object keys. nlohmann::json keeps one of two
// equal keys silently; a checkpoint header or config with two entries of one name
// is ambiguous, so it is an error here.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace forge::io {

// Parses `text`. On a syntax error or a duplicate key throws IoError
// "[<component>] <what>: duplicate key 'x' in ORIGIN" / "... invalid JSON (...) in ORIGIN".
nlohmann::json parse_json_strict(std::string_view text, const std::string& component,
                                 const std::string& origin);

}  // namespace forge::io
