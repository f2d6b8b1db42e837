// The values a chat template computes with: Python's types as Jinja sees them
// (undefined, None, bool, int, float, str, list/tuple, dict, namespace, callable).
// Lists and dicts are shared and never mutated after construction, except a
// namespace's attributes (`{% set ns.x = ... %}`), as in jinja2's sandbox.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace forge::text::jinja {

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Callable;
class Interp;

struct Value {
  enum class Type { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };
  Type type = Type::Undefined;
  bool b = false;
  bool is_tuple = false;      // List: printed as (a, b)
  bool is_namespace = false;  // Dict: attributes may be assigned
  std::int64_t i = 0;
  double f = 0;
  // String: the text, shared so copies of a Value never copy it; Undefined:
  // the message its misuse raises ("'x' is undefined").
  std::shared_ptr<const std::string> sp;
  std::shared_ptr<const List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<const Callable> fn;

  static Value undefined(std::string name = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(std::int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value make_list(List v, bool tuple = false);
  static Value make_dict(std::shared_ptr<Dict> d);
  static Value callable(std::shared_ptr<const Callable> c);

  const std::string& str() const {
    static const std::string empty;
    return sp ? *sp : empty;
  }
  bool is_undefined() const { return type == Type::Undefined; }
  bool is_none() const { return type == Type::None; }
  bool is_string() const { return type == Type::String; }
  bool is_number() const { return type == Type::Int || type == Type::Float; }
  bool is_list() const { return type == Type::List; }
  bool is_dict() const { return type == Type::Dict; }
};

// A dict in insertion order (Python 3.7+ dicts and the JSON the template got).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

// Arguments of a call: positional, then keyword in source order.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // Positional `i` or keyword `name`, else undefined.
  const Value* get(std::size_t i, const std::string& name) const;
};

struct Callable {
  std::string name;
  std::function<Value(Interp&, const Args&, int line)> fn;
};

// Python's truthiness: empty strings, lists and dicts, 0 and None are false.
bool truthy(const Value& v);
// Python's str() as Jinja prints it (undefined prints as "").
std::string to_str(const Value& v);
// Python's repr() (strings quoted), used inside lists and dicts.
std::string to_repr(const Value& v);
// Python's ==.
bool equal(const Value& a, const Value& b);
// jinja2's type names for messages: "str", "int", "list", "dict" ...
const char* type_name(const Value& v);

// Python's float repr: shortest round-trip digits, "1.0", "1e-05", "inf".
std::string float_repr(double v);

// JSON in, with object keys in document order; `depth` bounds nesting.
Value from_json(const nlohmann::ordered_json& j, int depth = 0);

// Code points of a UTF-8 string (Python indexes strings by code point).
std::vector<std::string> code_points(const std::string& s);

}  // namespace forge::text::jinja
