// Filters (`x | trim`) and tests (`x is defined`) by name, as jinja2 defines
// them; `tojson` is transformers' (json.dumps with ensure_ascii=False).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "text/jinja/interp.h"
#include "text/jinja/lexer.h"
#include "text/jinja/pystr.h"

namespace forge::text::jinja {
namespace {

const Value* arg(const Args& a, std::size_t i, const char* name) { return a.get(i, name); }

// `a.b.c` attribute paths, as selectattr/map/join/sort take them.
Value attr_path(Interp& in, const Value& v, const std::string& path, int line) {
  Value cur = v;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const std::size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (cur.type == Value::Type::List && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const std::size_t k = std::strtoull(part.c_str(), nullptr, 10);
      cur = k < cur.list->size() ? (*cur.list)[k] : Value::undefined("no element " + part);
    } else if (cur.is_undefined()) {
      return cur;
    } else {
      cur = in.eval_attr(cur, part, line);
    }
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

const std::string& str_arg(const Args& a, std::size_t i, const char* name, const std::string& filter, int line) {
  const Value* v = arg(a, i, name);
  if (!v || !v->is_string()) fail(line, "filter '" + filter + "' needs a string argument '" + name + "'");
  return v->str();
}

Value to_int(const Value& v, const Value& dflt) {
  switch (v.type) {
    case Value::Type::Int: return v;
    case Value::Type::Bool: return Value::integer(v.b);
    case Value::Type::Float:
      if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return dflt;
      return Value::integer(static_cast<std::int64_t>(v.f));
    case Value::Type::String: {
      const std::string t = py_strip(v.str(), std::nullopt, true, true);
      if (t.empty()) return dflt;
      char* end = nullptr;
      errno = 0;
      const long long x = std::strtoll(t.c_str(), &end, 10);
      if (*end == '\0' && errno == 0) return Value::integer(x);
      const double f = std::strtod(t.c_str(), &end);
      if (*end == '\0' && std::isfinite(f) && std::fabs(f) < 9.2e18) return Value::integer(static_cast<std::int64_t>(f));
      return dflt;
    }
    default: return dflt;
  }
}

Value to_float(const Value& v, const Value& dflt) {
  switch (v.type) {
    case Value::Type::Int: return Value::number(static_cast<double>(v.i));
    case Value::Type::Bool: return Value::number(v.b);
    case Value::Type::Float: return v;
    case Value::Type::String: {
      const std::string t = py_strip(v.str(), std::nullopt, true, true);
      char* end = nullptr;
      const double f = std::strtod(t.c_str(), &end);
      if (!t.empty() && *end == '\0') return Value::number(f);
      return dflt;
    }
    default: return dflt;
  }
}

std::int64_t length_of(const Value& v, int line) {
  switch (v.type) {
    case Value::Type::Undefined: return 0;
    case Value::Type::String: return static_cast<std::int64_t>(code_points(v.str()).size());
    case Value::Type::List: return static_cast<std::int64_t>(v.list->size());
    case Value::Type::Dict: return static_cast<std::int64_t>(v.dict->items.size());
    default: fail(line, std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

// selectattr/rejectattr/select/reject: keep items whose (attribute) passes the test.
Value select(Interp& in, const Value& v, const Args& a, bool by_attr, bool keep, const std::string& fname, int line) {
  std::size_t i = 0;
  std::string attr;
  if (by_attr) attr = str_arg(a, i++, "attribute", fname, line);
  std::string test;
  Args targs;
  if (i < a.pos.size()) {
    if (!a.pos[i].is_string()) fail(line, "filter '" + fname + "' needs a test name");
    test = a.pos[i++].str();
    targs.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(i), a.pos.end());
  }
  List out;
  for (const auto& item : iterate(v, line)) {
    in.step(line);
    const Value x = by_attr ? attr_path(in, item, attr, line) : item;
    const bool pass = test.empty() ? truthy(x) : apply_test(in, test, x, targs, line);
    if (pass == keep) out.push_back(item);
  }
  return Value::make_list(std::move(out));
}

std::string indent_unit(const Value* v, int line) {
  if (!v || v->is_none()) return {};
  if (v->type == Value::Type::Int) {
    if (v->i > 1024) fail(line, "tojson: indent too large");
    return std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, v->i)), ' ');
  }
  if (v->is_string()) return v->str();
  fail(line, std::string("tojson: indent must be an int or str, not ") + type_name(*v));
}

// The sort/unique/min/max key: the attribute, lower-cased unless case_sensitive.
Value sort_key(Interp& in, const Value& item, const Args& a, std::size_t case_pos, int line) {
  const Value* attr = a.get(99, "attribute");
  Value k = attr && !attr->is_none() ? attr_path(in, item, to_str(*attr), line) : item;
  const Value* cs = a.get(case_pos, "case_sensitive");
  if (k.is_string() && !(cs && truthy(*cs))) k = Value::string(py_lower(k.str()));
  return k;
}

// sort, unique, min, max.
Value ordered(Interp& in, const std::string& name, const Value& v, const Args& a, int line) {
  List items = iterate(v, line);
  const std::size_t case_pos = name == "sort" ? 1 : 0;
  std::vector<std::pair<Value, std::size_t>> keyed;
  for (std::size_t k = 0; k < items.size(); ++k) keyed.emplace_back(sort_key(in, items[k], a, case_pos, line), k);
  if (name == "unique") {
    List out;
    std::vector<Value> seen;
    for (auto& [key, k] : keyed) {
      bool dup = false;
      for (const auto& s : seen) dup = dup || equal(s, key);
      in.charge(seen.size(), line);
      if (!dup) {
        seen.push_back(key);
        out.push_back(items[k]);
      }
    }
    return Value::make_list(std::move(out));
  }
  in.charge(items.size() * 20, line);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [&](const auto& x, const auto& y) { return py_order(x.first, y.first, line) < 0; });
  if (name == "min" || name == "max") {
    if (keyed.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    if (name == "min") return items[keyed.front().second];
    // Python's max keeps the first of equal maxima.
    std::size_t best = keyed.size() - 1;
    while (best > 0 && py_order(keyed[best - 1].first, keyed.back().first, line) == 0) --best;
    return items[keyed[best].second];
  }
  const Value* rev = arg(a, 0, "reverse");
  if (rev && truthy(*rev)) {
    // sorted(reverse=True) keeps equal items in their original order.
    std::stable_sort(keyed.begin(), keyed.end(),
                     [&](const auto& x, const auto& y) { return py_order(x.first, y.first, line) > 0; });
  }
  List out;
  for (auto& [key, k] : keyed) out.push_back(items[k]);
  return Value::make_list(std::move(out));
}

}  // namespace

Value apply_filter(Interp& in, const std::string& name, const Value& v, const Args& a, int line) {
  in.charge(v.is_list() ? v.list->size() : v.is_dict() ? v.dict->items.size() : v.str().size() / 64, line);
  if (name == "trim") {
    std::optional<std::string> chars;
    if (const Value* c = arg(a, 0, "chars"); c && c->is_string()) chars = c->str();
    return Value::string(py_strip(to_str(v), chars, true, true));
  }
  if (name == "tojson") {
    std::optional<std::string> indent;
    if (const Value* i = arg(a, 0, "indent"); i && !i->is_none()) indent = indent_unit(i, line);
    std::string item_sep = indent ? "," : ", ", key_sep = ": ";
    if (const Value* s = a.get(99, "separators"); s && s->is_list() && s->list->size() == 2 &&
                                                   (*s->list)[0].is_string() && (*s->list)[1].is_string()) {
      item_sep = (*s->list)[0].str();
      key_sep = (*s->list)[1].str();
    }
    const Value* sk = a.get(99, "sort_keys");
    return Value::string(to_json(v, indent, sk && truthy(*sk), item_sep, key_sep, line));
  }
  if (name == "length" || name == "count") return Value::integer(length_of(v, line));
  if (name == "upper") return Value::string(py_upper(to_str(v)));
  if (name == "lower") return Value::string(py_lower(to_str(v)));
  if (name == "capitalize") return Value::string(py_capitalize(to_str(v)));
  if (name == "title") return Value::string(jinja_title(to_str(v)));
  if (name == "string") return Value::string(to_str(v));
  if (name == "safe") return v;
  if (name == "default" || name == "d") {
    const Value* b = arg(a, 1, "boolean");
    const bool use = v.is_undefined() || (b && truthy(*b) && !truthy(v));
    if (!use) return v;
    const Value* d = arg(a, 0, "default_value");
    return d ? *d : Value::string("");
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::make_list({});
    if (v.type != Value::Type::Dict) fail(line, std::string("filter 'items' needs a dict, got ") + type_name(v));
    List out;
    for (const auto& [k, x] : v.dict->items) out.push_back(Value::make_list({Value::string(k), x}, true));
    return Value::make_list(std::move(out));
  }
  if (name == "join") {
    const Value* sep = arg(a, 0, "d");
    const Value* attr = arg(a, 1, "attribute");
    const std::string s = sep ? to_str(*sep) : "";
    std::string out;
    bool first = true;
    for (const auto& x : iterate(v, line)) {
      if (!first) out += s;
      first = false;
      out += to_str(attr && !attr->is_none() ? attr_path(in, x, to_str(*attr), line) : x);
      in.check_size(out.size(), line);
    }
    return Value::string(std::move(out));
  }
  if (name == "selectattr" || name == "rejectattr") return select(in, v, a, true, name == "selectattr", name, line);
  if (name == "select" || name == "reject") return select(in, v, a, false, name == "select", name, line);
  if (name == "map") {
    List out;
    const Value* attr = a.get(99, "attribute");
    const Value* dflt = a.get(99, "default");
    if (!attr && (a.pos.empty() || !a.pos[0].is_string())) fail(line, "filter 'map' needs a filter name or attribute=");
    for (const auto& item : iterate(v, line)) {
      in.step(line);
      if (attr) {
        Value x = attr_path(in, item, to_str(*attr), line);
        out.push_back(x.is_undefined() && dflt ? *dflt : x);
      } else {
        Args fa;
        fa.pos.assign(a.pos.begin() + 1, a.pos.end());
        fa.kw = a.kw;
        out.push_back(apply_filter(in, a.pos[0].str(), item, fa, line));
      }
    }
    return Value::make_list(std::move(out));
  }
  if (name == "first" || name == "last") {
    if (v.is_list()) {
      if (v.list->empty()) return Value::undefined("no first item, sequence was empty");
      return name == "first" ? v.list->front() : v.list->back();
    }
    const List items = iterate(v, line);
    if (items.empty()) return Value::undefined("no first item, sequence was empty");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::make_list(iterate(v, line));
  if (name == "sort" || name == "unique" || name == "min" || name == "max") return ordered(in, name, v, a, line);
  if (name == "sum") {
    const Value* attr = arg(a, 0, "attribute");
    const Value* start = arg(a, 1, "start");
    Value total = start ? *start : Value::integer(0);
    for (const auto& item : iterate(v, line)) {
      const Value x = attr && !attr->is_none() ? attr_path(in, item, to_str(*attr), line) : item;
      const bool ints = (total.type == Value::Type::Int || total.type == Value::Type::Bool) &&
                        (x.type == Value::Type::Int || x.type == Value::Type::Bool);
      const bool nums = (total.is_number() || total.type == Value::Type::Bool) && (x.is_number() || x.type == Value::Type::Bool);
      if (!nums) fail(line, std::string("filter 'sum' cannot add '") + type_name(x) + "' to '" + type_name(total) + "'");
      auto as_i = [](const Value& y) { return y.type == Value::Type::Bool ? static_cast<std::int64_t>(y.b) : y.i; };
      auto as_f = [&](const Value& y) { return y.type == Value::Type::Float ? y.f : static_cast<double>(as_i(y)); };
      if (ints) {
        std::int64_t r = 0;
        if (__builtin_add_overflow(as_i(total), as_i(x), &r)) fail(line, "integer overflow in filter 'sum'");
        total = Value::integer(r);
      } else {
        total = Value::number(as_f(total) + as_f(x));
      }
    }
    return total;
  }
  if (name == "round") {
    const Value* p = arg(a, 0, "precision");
    const Value* m = arg(a, 1, "method");
    const std::string method = m ? to_str(*m) : "common";
    if (!v.is_number()) fail(line, std::string("filter 'round' needs a number, got ") + type_name(v));
    const double x = v.type == Value::Type::Float ? v.f : static_cast<double>(v.i);
    const std::int64_t prec = p && p->type == Value::Type::Int ? std::clamp<std::int64_t>(p->i, -20, 20) : 0;
    const double scale = std::pow(10.0, static_cast<double>(prec));
    double r = 0;
    if (method == "common") r = std::nearbyint(x * scale) / scale;  // Python's round: half to even
    else if (method == "ceil") r = std::ceil(x * scale) / scale;
    else if (method == "floor") r = std::floor(x * scale) / scale;
    else fail(line, "filter 'round': method must be common, ceil or floor");
    if (v.type == Value::Type::Int && method == "common" && prec >= 0) return v;
    return Value::number(r);
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto cps = code_points(v.str());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    List items = iterate(v, line);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "replace") {
    const Value* count = arg(a, 2, "count");
    return Value::string(py_replace(to_str(v), str_arg(a, 0, "old", name, line), str_arg(a, 1, "new", name, line),
                                    count && count->type == Value::Type::Int ? count->i : -1, kMaxStringBytes, line));
  }
  if (name == "int") {
    const Value* d = arg(a, 0, "default");
    return to_int(v, d ? *d : Value::integer(0));
  }
  if (name == "float") {
    const Value* d = arg(a, 0, "default");
    return to_float(v, d ? *d : Value::number(0.0));
  }
  if (name == "abs") {
    if (v.type == Value::Type::Float) return Value::number(std::fabs(v.f));
    if (v.type == Value::Type::Int && v.i != INT64_MIN) return Value::integer(v.i < 0 ? -v.i : v.i);
    if (v.type == Value::Type::Bool) return Value::integer(v.b);
    fail(line, std::string("filter 'abs' needs a number, got ") + type_name(v));
  }
  if (name == "indent") {
    const Value* w = arg(a, 0, "width");
    const Value* first = arg(a, 1, "first");
    const Value* blank = arg(a, 2, "blank");
    std::string pad = w && w->is_string() ? w->str() : std::string(w && w->type == Value::Type::Int ? static_cast<std::size_t>(std::clamp<std::int64_t>(w->i, 0, 1024)) : 4, ' ');
    const std::string s = to_str(v);
    std::string out;
    std::size_t pos = 0;
    bool first_line = true;
    while (true) {
      const std::size_t nl = s.find('\n', pos);
      const std::string ln = s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      const bool pad_it = first_line ? (first && truthy(*first)) : (!ln.empty() || (blank && truthy(*blank)));
      if (pad_it) out += pad;
      out += ln;
      in.check_size(out.size(), line);
      if (nl == std::string::npos) break;
      out += '\n';
      pos = nl + 1;
      first_line = false;
    }
    return Value::string(std::move(out));
  }
  fail(line, "unknown filter '" + name + "'");
}

bool apply_test(Interp& in, const std::string& name, const Value& v, const Args& a, int line) {
  using T = Value::Type;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.type == T::Dict && !v.is_namespace;
  if (name == "iterable") return v.type == T::List || v.type == T::String || v.type == T::Undefined ||
                                 (v.type == T::Dict && !v.is_namespace);
  if (name == "sequence") return v.type == T::List || v.type == T::String || v.type == T::Undefined ||
                                 (v.type == T::Dict && !v.is_namespace);
  if (name == "number") return v.type == T::Int || v.type == T::Float || v.type == T::Bool;
  if (name == "integer") return v.type == T::Int;
  if (name == "float") return v.type == T::Float;
  if (name == "boolean") return v.type == T::Bool;
  if (name == "true") return v.type == T::Bool && v.b;
  if (name == "false") return v.type == T::Bool && !v.b;
  if (name == "callable") return v.type == T::Callable;
  if (name == "lower" || name == "upper") {
    // str(value).islower() / isupper(): at least one cased letter, none of the other case.
    const std::string s = to_str(v);
    const std::string lo = py_lower(s), up = py_upper(s);
    return name == "lower" ? (lo == s && up != s) : (up == s && lo != s);
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    // value % 2 == 1 etc., as Python computes it for ints and floats.
    if (v.type != T::Int && v.type != T::Bool && v.type != T::Float) {
      fail(line, "test '" + name + "' needs a number, got " + std::string(type_name(v)));
    }
    const Value* d = name == "divisibleby" ? arg(a, 0, "num") : nullptr;
    if (name == "divisibleby" && (!d || (d->type != T::Int && d->type != T::Float))) {
      fail(line, "test 'divisibleby' needs a number");
    }
    const double m = name == "divisibleby" ? (d->type == T::Int ? static_cast<double>(d->i) : d->f) : 2.0;
    if (m == 0) fail(line, "test 'divisibleby': modulo by zero");
    if (v.type != T::Float && (!d || d->type == T::Int)) {
      const std::int64_t x = v.type == T::Bool ? v.b : v.i;
      const std::int64_t y = static_cast<std::int64_t>(m);
      const std::int64_t r = y == -1 ? 0 : ((x % y) + y) % y;
      return name == "odd" ? r == 1 : r == 0;
    }
    const double x = v.type == T::Float ? v.f : static_cast<double>(v.type == T::Bool ? v.b : v.i);
    const double r = x - std::floor(x / m) * m;
    return name == "odd" ? r == 1 : r == 0;
  }
  const Value* other = arg(a, 0, "other");
  static const char* const cmp[] = {"equalto", "eq", "==", "ne", "!=", "lt", "<", "le", "<=", "gt", ">", "ge", ">=", "in", "sameas"};
  for (const char* c : cmp) {
    if (name != c) continue;
    if (!other) fail(line, "test '" + name + "' needs an argument");
    if (name == "equalto" || name == "eq" || name == "==") return equal(v, *other);
    if (name == "ne" || name == "!=") return !equal(v, *other);
    if (name == "sameas") return equal(v, *other) && v.type == other->type;
    Expr e;
    e.kind = Expr::Kind::Compare;
    e.line = line;
    const std::string op = name == "lt" ? "<" : name == "le" ? "<=" : name == "gt" ? ">" : name == "ge" ? ">=" : name;
    // Reuse the comparison operators through literal operands.
    auto lit = [&](const Value& x) {
      auto n = std::make_unique<Expr>();
      n->kind = Expr::Kind::Literal;
      n->line = line;
      n->value = x;
      return n;
    };
    e.args.push_back(lit(v));
    e.args.push_back(lit(*other));
    e.ops.push_back(op);
    return truthy(in.eval(e));
  }
  fail(line, "unknown test '" + name + "'");
}

}  // namespace forge::text::jinja
