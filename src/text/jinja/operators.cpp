// Jinja's operators with Python's semantics: slicing, arithmetic (int64 with
// overflow checks, floor division and modulo as Python rounds them), string
// and list concatenation and repetition, comparison chains and `in`.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "text/jinja/interp.h"
#include "text/jinja/lexer.h"

namespace forge::text::jinja {

namespace {

// Python's slice.indices(): the positions a[start:stop:step] visits.
std::vector<std::size_t> slice_positions(std::int64_t n, const Value* start, const Value* stop,
                                         const Value* stepv, int line) {
  auto as_int = [&](const Value* v, const char* what) -> std::optional<std::int64_t> {
    if (!v || v->is_none()) return std::nullopt;
    if (v->type == Value::Type::Int) return v->i;
    if (v->type == Value::Type::Bool) return static_cast<std::int64_t>(v->b);
    fail(line, std::string("slice ") + what + " must be an integer or none, not " + type_name(*v));
  };
  const std::int64_t step = as_int(stepv, "step").value_or(1);
  if (step == 0) fail(line, "slice step cannot be zero");
  const std::int64_t lower = step < 0 ? -1 : 0;
  const std::int64_t upper = step < 0 ? n - 1 : n;
  auto clamp = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) x = x < -n ? lower : x + n;
    return x < lower ? lower : x > upper ? upper : x;
  };
  const std::int64_t b = clamp(as_int(start, "start"), step < 0 ? upper : lower);
  const std::int64_t e = clamp(as_int(stop, "stop"), step < 0 ? lower : upper);
  std::vector<std::size_t> pos;
  if (step > 0) {
    for (std::int64_t k = b; k < e; k += step) {
      pos.push_back(static_cast<std::size_t>(k));
      if (e - k <= step) break;
    }
  } else {
    for (std::int64_t k = b; k > e; k += step) {
      pos.push_back(static_cast<std::size_t>(k));
      if (k - e <= -step) break;
    }
  }
  return pos;
}

}  // namespace

Value Interp::eval_slice(const Expr& e) {
  const Value obj = eval(*e.args[0]);
  Value parts[3];
  const Value* p[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < 3; ++k) {
    if (e.args[static_cast<std::size_t>(k) + 1]) {
      parts[k] = eval(*e.args[static_cast<std::size_t>(k) + 1]);
      p[k] = &parts[k];
    }
  }
  if (obj.is_undefined()) undefined_error(obj, e.line);
  charge(obj.is_list() ? obj.list->size() : obj.str().size() / 64, e.line);
  if (obj.type == Value::Type::List) {
    List out;
    for (std::size_t k : slice_positions(static_cast<std::int64_t>(obj.list->size()), p[0], p[1], p[2], e.line)) {
      out.push_back((*obj.list)[k]);
    }
    return Value::make_list(std::move(out), obj.is_tuple);
  }
  if (obj.type == Value::Type::String) {
    const auto cps = code_points(obj.str());
    std::string out;
    for (std::size_t k : slice_positions(static_cast<std::int64_t>(cps.size()), p[0], p[1], p[2], e.line)) {
      out += cps[k];
    }
    return Value::string(std::move(out));
  }
  // jinja2 compiles a slice to Python's own subscript: other types raise.
  fail(e.line, std::string("'") + type_name(obj) + "' object is not subscriptable");
}

namespace {

bool intlike(const Value& v) { return v.type == Value::Type::Int || v.type == Value::Type::Bool; }
std::int64_t ival(const Value& v) { return v.type == Value::Type::Bool ? v.b : v.i; }
double fval(const Value& v) { return v.type == Value::Type::Float ? v.f : static_cast<double>(ival(v)); }
bool numeric(const Value& v) { return intlike(v) || v.type == Value::Type::Float; }

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b, int line) {
  fail(line, "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

}  // namespace

Value Interp::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  if (op == "and" || op == "or") {
    Value a = eval(*e.args[0]);
    if (truthy(a) == (op == "or")) return a;
    return eval(*e.args[1]);
  }
  const Value a = eval(*e.args[0]);
  const Value b = eval(*e.args[1]);
  if (op == "~") {
    if (a.is_list() || b.is_list()) charge((a.is_list() ? a.list->size() : 0) + (b.is_list() ? b.list->size() : 0), e.line);
    std::string s = to_str(a) + to_str(b);
    charge(s.size() / 64, e.line);
    check_size(s.size(), e.line);
    return Value::string(std::move(s));
  }
  if (a.is_undefined()) undefined_error(a, e.line);
  if (b.is_undefined()) undefined_error(b, e.line);
  const int line = e.line;
  if (intlike(a) && intlike(b)) {
    const std::int64_t x = ival(a), y = ival(b);
    std::int64_t r = 0;
    if (op == "+" || op == "-" || op == "*") {
      const bool over = op == "+" ? __builtin_add_overflow(x, y, &r)
                        : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                    : __builtin_mul_overflow(x, y, &r);
      if (over) fail(line, "integer overflow in " + op);
      return Value::integer(r);
    }
    if (op == "/") {
      if (y == 0) fail(line, "division by zero");
      return Value::number(static_cast<double>(x) / static_cast<double>(y));
    }
    if (op == "//" || op == "%") {
      if (y == 0) fail(line, "integer division or modulo by zero");
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1) fail(line, "integer overflow in " + op);
      std::int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (y < 0) return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
      std::int64_t acc = 1, base = x, n = y;
      while (n > 0) {
        if ((n & 1) && __builtin_mul_overflow(acc, base, &acc)) fail(line, "integer overflow in **");
        n >>= 1;
        if (n > 0 && __builtin_mul_overflow(base, base, &base)) fail(line, "integer overflow in **");
      }
      return Value::integer(acc);
    }
  }
  if (numeric(a) && numeric(b)) {
    const double x = fval(a), y = fval(b);
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "/" || op == "//" || op == "%") {
      if (y == 0) fail(line, "float division by zero");
      if (op == "/") return Value::number(x / y);
      const double q = std::floor(x / y);
      return Value::number(op == "//" ? q : x - q * y);
    }
    if (op == "**") return Value::number(std::pow(x, y));
  }
  if (op == "+" && a.is_string() && b.is_string()) {
    check_size(a.str().size() + b.str().size(), line);
    charge((a.str().size() + b.str().size()) / 64, line);
    return Value::string(a.str() + b.str());
  }
  if (op == "+" && a.is_list() && b.is_list()) {
    check_items(a.list->size() + b.list->size(), line);
    charge(a.list->size() + b.list->size(), line);
    List l = *a.list;
    l.insert(l.end(), b.list->begin(), b.list->end());
    return Value::make_list(std::move(l), a.is_tuple && b.is_tuple);
  }
  if (op == "*" && (intlike(a) || intlike(b)) && (a.is_string() || b.is_string() || a.is_list() || b.is_list())) {
    const Value& seq = intlike(a) ? b : a;
    const std::int64_t n = std::max<std::int64_t>(0, intlike(a) ? ival(a) : ival(b));
    const std::size_t unit = seq.is_string() ? seq.str().size() : seq.list->size();
    if (unit > 0 && static_cast<std::uint64_t>(n) > kMaxStringBytes / unit) {
      fail(line, "repeating a sequence " + std::to_string(n) + " times is too large");
    }
    charge(unit * static_cast<std::size_t>(n) / (seq.is_string() ? 64 : 1), line);
    if (seq.is_string()) {
      std::string s;
      for (std::int64_t k = 0; k < n; ++k) s += seq.str();
      return Value::string(std::move(s));
    }
    check_items(unit * static_cast<std::size_t>(n), line);
    List l;
    for (std::int64_t k = 0; k < n; ++k) l.insert(l.end(), seq.list->begin(), seq.list->end());
    return Value::make_list(std::move(l), seq.is_tuple);
  }
  if (op == "+" && (a.is_string() || b.is_string())) {
    fail(line, std::string("can only concatenate str (not \"") + type_name(a.is_string() ? b : a) + "\") to str");
  }
  bad_operands(op, a, b, line);
}

namespace {

// Python's <, for numbers, strings and lists; other pairs are errors.
int order(const Value& a, const Value& b, const std::string& op, int line, int depth = 0) {
  if (numeric(a) && numeric(b)) {
    if (intlike(a) && intlike(b)) return ival(a) < ival(b) ? -1 : ival(a) > ival(b) ? 1 : 0;
    const double x = fval(a), y = fval(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str() ? -1 : a.str() > b.str() ? 1 : 0;
  if (a.is_list() && b.is_list() && depth < 64) {
    for (std::size_t k = 0; k < a.list->size() && k < b.list->size(); ++k) {
      if (!equal((*a.list)[k], (*b.list)[k])) return order((*a.list)[k], (*b.list)[k], op, line, depth + 1);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  if (a.is_undefined()) undefined_error(a, line);
  if (b.is_undefined()) undefined_error(b, line);
  fail(line, "'" + op + "' not supported between '" + type_name(a) + "' and '" + type_name(b) + "'");
}

bool contains(const Value& hay, const Value& needle, int line) {
  switch (hay.type) {
    case Value::Type::Undefined: return false;
    case Value::Type::String:
      if (!needle.is_string()) {
        fail(line, std::string("'in <string>' requires a string as left operand, not ") + type_name(needle));
      }
      return hay.str().find(needle.str()) != std::string::npos;
    case Value::Type::List:
      for (const auto& x : *hay.list) {
        if (equal(x, needle)) return true;
      }
      return false;
    case Value::Type::Dict: return needle.is_string() && hay.dict->find(needle.str()) != nullptr;
    default: fail(line, std::string("argument of type '") + type_name(hay) + "' is not iterable");
  }
}

}  // namespace

int py_order(const Value& a, const Value& b, int line) { return order(a, b, "<", line); }

Value Interp::eval_compare(const Expr& e) {
  Value left = eval(*e.args[0]);
  for (std::size_t k = 0; k < e.ops.size(); ++k) {
    Value right = eval(*e.args[k + 1]);
    const std::string& op = e.ops[k];
    for (const Value* v : {&left, &right}) {
      if (v->is_list()) charge(v->list->size(), e.line);
      if (v->is_string()) charge(v->str().size() / 64, e.line);
    }
    bool r = false;
    if (op == "==") r = equal(left, right);
    else if (op == "!=") r = !equal(left, right);
    else if (op == "in") r = contains(right, left, e.line);
    else if (op == "notin") r = !contains(right, left, e.line);
    else {
      const int c = order(left, right, op, e.line);
      r = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

}  // namespace forge::text::jinja
