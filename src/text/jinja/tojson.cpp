// The tojson filter as transformers defines it: Python's
// json.dumps(value, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/interp.h"
#include "text/jinja/lexer.h"

namespace forge::text::jinja {
namespace {

struct Dumper {
  const std::optional<std::string>& indent;
  bool sort_keys;
  const std::string& item_sep;
  const std::string& key_sep;
  int line;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int k = 0; k < level; ++k) out += *indent;
  }

  void string(const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            out += b;
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  }

  void dump(const Value& v, int level) {
    if (level > 128) fail(line, "tojson: value nests deeper than 128 levels");
    if (out.size() > kMaxStringBytes) fail(line, "tojson: output grew too large");
    switch (v.type) {
      case Value::Type::None: out += "null"; return;
      case Value::Type::Bool: out += v.b ? "true" : "false"; return;
      case Value::Type::Int: out += std::to_string(v.i); return;
      case Value::Type::Float:
        if (std::isnan(v.f)) out += "NaN";
        else if (std::isinf(v.f)) out += v.f > 0 ? "Infinity" : "-Infinity";
        else out += float_repr(v.f);
        return;
      case Value::Type::String: string(v.str()); return;
      case Value::Type::List: {
        if (v.list->empty()) {
          out += "[]";
          return;
        }
        out += '[';
        bool first = true;
        for (const auto& x : *v.list) {
          if (!first) out += item_sep;
          first = false;
          if (indent) newline(level + 1);
          dump(x, level + 1);
        }
        if (indent) newline(level);
        out += ']';
        return;
      }
      case Value::Type::Dict: {
        if (v.is_namespace) break;
        if (v.dict->items.empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& kv : v.dict->items) items.push_back(&kv);
        if (sort_keys) {
          std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
        }
        out += '{';
        bool first = true;
        for (const auto* kv : items) {
          if (!first) out += item_sep;
          first = false;
          if (indent) newline(level + 1);
          string(kv->first);
          out += key_sep;
          dump(kv->second, level + 1);
        }
        if (indent) newline(level);
        out += '}';
        return;
      }
      default: break;
    }
    fail(line, std::string("tojson: object of type ") + type_name(v) + " is not JSON serializable");
  }
};

}  // namespace

std::string to_json(const Value& v, const std::optional<std::string>& indent, bool sort_keys,
                    const std::string& item_sep, const std::string& key_sep, int line) {
  Dumper d{indent, sort_keys, item_sep, key_sep, line, {}};
  d.dump(v, 0);
  return std::move(d.out);
}

}  // namespace forge::text::jinja
