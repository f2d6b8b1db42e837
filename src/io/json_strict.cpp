#include "io/json_strict.h"

#include <set>
#include <vector>

#include "forge/error.h"

namespace forge::io {

nlohmann::json parse_json_strict(std::string_view text, const std::string& component,
                                 const std::string& origin) {
  using json = nlohmann::json;
  // One key set per open object; arrays need no entry because keys only occur in objects.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  bool has_duplicate = false;
  json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get<std::string>()).second && !has_duplicate) {
          has_duplicate = true;
          duplicate = parsed.get<std::string>();
        }
        break;
      default: break;
    }
    return true;
  };
  json out;
  try {
    out = json::parse(text.begin(), text.end(), track);
  } catch (const json::exception& e) {
    throw IoError("[" + component + "] invalid JSON (" + e.what() + ") in " + origin);
  }
  if (has_duplicate) throw IoError("[" + component + "] duplicate key '" + duplicate + "' in " + origin);
  return out;
}

}  // namespace forge::io
