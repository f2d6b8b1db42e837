// Value helpers: construction, Python truthiness, str()/repr(), ==, and JSON in.
#include "text/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "text/jinja/lexer.h"
#include "text/utf8.h"

namespace forge::text::jinja {

Value Value::undefined(std::string name) {
  Value v;
  v.sp = std::make_shared<const std::string>(std::move(name));
  return v;
}
Value Value::none() {
  Value v;
  v.type = Type::None;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.type = Type::Bool;
  v.b = x;
  return v;
}
Value Value::integer(std::int64_t x) {
  Value v;
  v.type = Type::Int;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.type = Type::Float;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  Value v;
  v.type = Type::String;
  v.sp = std::make_shared<const std::string>(std::move(x));
  return v;
}
Value Value::make_list(List x, bool tuple) {
  Value v;
  v.type = Type::List;
  v.is_tuple = tuple;
  v.list = std::make_shared<const List>(std::move(x));
  return v;
}
Value Value::make_dict(std::shared_ptr<Dict> d) {
  Value v;
  v.type = Type::Dict;
  v.dict = std::move(d);
  return v;
}
Value Value::callable(std::shared_ptr<const Callable> c) {
  Value v;
  v.type = Type::Callable;
  v.fn = std::move(c);
  return v;
}

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

const Value* Args::get(std::size_t i, const std::string& name) const {
  if (i < pos.size()) return &pos[i];
  for (const auto& [k, v] : kw) {
    if (k == name) return &v;
  }
  return nullptr;
}

bool truthy(const Value& v) {
  switch (v.type) {
    case Value::Type::Undefined:
    case Value::Type::None: return false;
    case Value::Type::Bool: return v.b;
    case Value::Type::Int: return v.i != 0;
    case Value::Type::Float: return v.f != 0;
    case Value::Type::String: return !v.str().empty();
    case Value::Type::List: return !v.list->empty();
    case Value::Type::Dict: return v.is_namespace || !v.dict->items.empty();
    case Value::Type::Callable: return true;
  }
  return false;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional for
  // exponents in [-4, 16), else d.ddde+XX.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  const std::size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<std::size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      const std::size_t point = static_cast<std::size_t>(exp) + 1;
      out.assign(digits, 0, point);
      out += '.';
      out.append(digits, point, std::string::npos);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return neg ? "-" + out : out;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

std::string repr_at(const Value& v, int depth);

std::string container_str(const Value& v, int depth) {
  if (depth > 64) fail(0, "value nests too deeply to print");
  if (v.type == Value::Type::List) {
    std::string out = v.is_tuple ? "(" : "[";
    for (std::size_t k = 0; k < v.list->size(); ++k) {
      if (k) out += ", ";
      out += repr_at((*v.list)[k], depth + 1);
    }
    if (v.is_tuple && v.list->size() == 1) out += ",";
    return out + (v.is_tuple ? ")" : "]");
  }
  std::string out = v.is_namespace ? "<Namespace {" : "{";
  bool first = true;
  for (const auto& [k, x] : v.dict->items) {
    if (!first) out += ", ";
    first = false;
    out += repr_string(k) + ": " + repr_at(x, depth + 1);
  }
  return out + (v.is_namespace ? "}>" : "}");
}

std::string repr_at(const Value& v, int depth) {
  switch (v.type) {
    case Value::Type::String: return repr_string(v.str());
    case Value::Type::Undefined: return "Undefined";
    case Value::Type::List:
    case Value::Type::Dict: return container_str(v, depth);
    default: return to_str(v);
  }
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.type) {
    case Value::Type::Undefined: return "";
    case Value::Type::None: return "None";
    case Value::Type::Bool: return v.b ? "True" : "False";
    case Value::Type::Int: return std::to_string(v.i);
    case Value::Type::Float: return float_repr(v.f);
    case Value::Type::String: return v.str();
    case Value::Type::List:
    case Value::Type::Dict: return container_str(v, 0);
    case Value::Type::Callable: return "<function " + v.fn->name + ">";
  }
  return "";
}

std::string to_repr(const Value& v) { return repr_at(v, 0); }

namespace {
bool is_numeric(const Value& v) {
  return v.type == Value::Type::Int || v.type == Value::Type::Float || v.type == Value::Type::Bool;
}
double as_double(const Value& v) {
  return v.type == Value::Type::Float ? v.f : v.type == Value::Type::Bool ? (v.b ? 1.0 : 0.0) : static_cast<double>(v.i);
}
bool equal_at(const Value& a, const Value& b, int depth) {
  if (depth > 64) fail(0, "values nest too deeply to compare");
  if (is_numeric(a) && is_numeric(b)) {
    if (a.type != Value::Type::Float && b.type != Value::Type::Float) {
      const std::int64_t x = a.type == Value::Type::Bool ? a.b : a.i;
      const std::int64_t y = b.type == Value::Type::Bool ? b.b : b.i;
      return x == y;
    }
    return as_double(a) == as_double(b);
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Value::Type::Undefined:
    case Value::Type::None: return true;
    case Value::Type::String: return a.str() == b.str();
    case Value::Type::List:
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (std::size_t k = 0; k < a.list->size(); ++k) {
        if (!equal_at((*a.list)[k], (*b.list)[k], depth + 1)) return false;
      }
      return true;
    case Value::Type::Dict:
      if (a.dict == b.dict) return true;
      if (a.is_namespace || b.is_namespace || a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, x] : a.dict->items) {
        const Value* y = b.dict->find(k);
        if (!y || !equal_at(x, *y, depth + 1)) return false;
      }
      return true;
    case Value::Type::Callable: return a.fn == b.fn;
    default: return false;
  }
}
}  // namespace

bool equal(const Value& a, const Value& b) { return equal_at(a, b, 0); }

const char* type_name(const Value& v) {
  switch (v.type) {
    case Value::Type::Undefined: return "Undefined";
    case Value::Type::None: return "NoneType";
    case Value::Type::Bool: return "bool";
    case Value::Type::Int: return "int";
    case Value::Type::Float: return "float";
    case Value::Type::String: return "str";
    case Value::Type::List: return v.is_tuple ? "tuple" : "list";
    case Value::Type::Dict: return v.is_namespace ? "Namespace" : "dict";
    case Value::Type::Callable: return "function";
  }
  return "?";
}

Value from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > 128) fail(0, "template variables nest deeper than 128 levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& x : j) l.push_back(from_json(x, depth + 1));
      return Value::make_list(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, x] : j.items()) d->set(k, from_json(x, depth + 1));
      return Value::make_dict(std::move(d));
    }
    default: fail(0, "template variables hold a value JSON cannot express");
  }
}

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Step st = utf8_next(s, i);
    out.push_back(s.substr(i, st.len));
    i += st.len;
  }
  return out;
}

}  // namespace forge::text::jinja
