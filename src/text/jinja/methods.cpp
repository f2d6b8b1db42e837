// Methods of str and dict values (`s.startswith('x')`, `d.items()`), and the
// global functions a render sees: raise_exception, strftime_now, namespace,
// range, dict.
#include <ctime>

#include "forge/chat_template.h"
#include "text/jinja/interp.h"
#include "text/jinja/lexer.h"
#include "text/jinja/pystr.h"

namespace forge::text::jinja {
namespace {

using Fn = std::function<Value(Interp&, const Args&, int)>;

Value make_fn(std::string name, Fn fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  return Value::callable(std::move(c));
}

std::optional<std::string> opt_str(const Args& a, std::size_t i, const std::string& name,
                                   const std::string& method, int line) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) fail(line, method + "() argument must be a str or None, not " + type_name(*v));
  return v->str();
}

const std::string& req_str(const Args& a, std::size_t i, const std::string& name, const std::string& method,
                           int line) {
  const Value* v = a.get(i, name);
  if (!v) fail(line, method + "() missing argument '" + name + "'");
  if (!v->is_string()) fail(line, method + "() argument '" + name + "' must be a str, not " + type_name(*v));
  return v->str();
}

long long opt_int(const Args& a, std::size_t i, const std::string& name, long long dflt, const std::string& method,
                  int line) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return dflt;
  if (v->type == Value::Type::Int) return v->i;
  if (v->type == Value::Type::Bool) return v->b;
  fail(line, method + "() argument '" + name + "' must be an int, not " + type_name(*v));
}

// startswith/endswith accept a str or a tuple of str.
bool affix(const std::string& s, const Value& arg, bool start, int line) {
  auto one = [&](const Value& p) {
    if (!p.is_string()) fail(line, std::string(start ? "startswith" : "endswith") + "() needs str arguments");
    if (p.str().size() > s.size()) return false;
    return start ? s.compare(0, p.str().size(), p.str()) == 0 : s.compare(s.size() - p.str().size(), p.str().size(), p.str()) == 0;
  };
  if (arg.is_list()) {
    for (const auto& p : *arg.list) {
      if (one(p)) return true;
    }
    return false;
  }
  return one(arg);
}

Value string_method(const std::string& s, const std::string& name) {
  if (name == "startswith" || name == "endswith") {
    const bool start = name == "startswith";
    return make_fn(name, [s, start, name](Interp&, const Args& a, int line) {
      const Value* p = a.get(0, "prefix");
      if (!p) fail(line, name + "() takes a prefix argument");
      return Value::boolean(affix(s, *p, start, line));
    });
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    return make_fn(name, [s, name](Interp&, const Args& a, int line) {
      return Value::string(py_strip(s, opt_str(a, 0, "chars", name, line), name != "rstrip", name != "lstrip"));
    });
  }
  if (name == "split") {
    return make_fn(name, [s](Interp& in, const Args& a, int line) {
      List out;
      for (auto& part : py_split(s, opt_str(a, 0, "sep", "split", line), opt_int(a, 1, "maxsplit", -1, "split", line))) {
        out.push_back(Value::string(std::move(part)));
      }
      in.check_items(out.size(), line);
      return Value::make_list(std::move(out));
    });
  }
  if (name == "replace") {
    return make_fn(name, [s](Interp&, const Args& a, int line) {
      return Value::string(py_replace(s, req_str(a, 0, "old", "replace", line), req_str(a, 1, "new", "replace", line),
                                      opt_int(a, 2, "count", -1, "replace", line), kMaxStringBytes, line));
    });
  }
  if (name == "upper") return make_fn(name, [s](Interp&, const Args&, int) { return Value::string(py_upper(s)); });
  if (name == "lower") return make_fn(name, [s](Interp&, const Args&, int) { return Value::string(py_lower(s)); });
  if (name == "title") return make_fn(name, [s](Interp&, const Args&, int) { return Value::string(py_title(s)); });
  if (name == "capitalize") {
    return make_fn(name, [s](Interp&, const Args&, int) { return Value::string(py_capitalize(s)); });
  }
  if (name == "find") {
    return make_fn(name, [s](Interp&, const Args& a, int line) {
      const std::size_t f = s.find(req_str(a, 0, "sub", "find", line));
      if (f == std::string::npos) return Value::integer(-1);
      return Value::integer(static_cast<std::int64_t>(code_points(s.substr(0, f)).size()));
    });
  }
  if (name == "join") {
    return make_fn(name, [s](Interp& in, const Args& a, int line) {
      const Value* it = a.get(0, "iterable");
      if (!it) fail(line, "join() takes an iterable argument");
      std::string out;
      bool first = true;
      for (const auto& x : iterate(*it, line)) {
        if (!x.is_string()) fail(line, std::string("join(): expected str items, found ") + type_name(x));
        if (!first) out += s;
        first = false;
        out += x.str();
        in.check_size(out.size(), line);
      }
      return Value::string(std::move(out));
    });
  }
  return Value::undefined();
}

Value dict_method(const std::shared_ptr<Dict>& d, const std::string& name) {
  if (name == "get") {
    return make_fn(name, [d](Interp&, const Args& a, int line) {
      const Value* k = a.get(0, "key");
      if (!k) fail(line, "get() takes a key argument");
      if (k->is_string()) {
        if (const Value* v = d->find(k->str())) return *v;
      }
      const Value* dflt = a.get(1, "default");
      return dflt ? *dflt : Value::none();
    });
  }
  if (name == "items" || name == "keys" || name == "values") {
    return make_fn(name, [d, name](Interp&, const Args&, int) {
      List out;
      for (const auto& [k, v] : d->items) {
        if (name == "items") out.push_back(Value::make_list({Value::string(k), v}, true));
        else out.push_back(name == "keys" ? Value::string(k) : v);
      }
      return Value::make_list(std::move(out));
    });
  }
  return Value::undefined();
}

}  // namespace

Value bound_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) return string_method(obj.str(), name);
  if (obj.type == Value::Type::Dict && !obj.is_namespace) return dict_method(obj.dict, name);
  return Value::undefined();
}

void add_builtins(Frame& g) {
  g.set("raise_exception", make_fn("raise_exception", [](Interp&, const Args& a, int) -> Value {
          const Value* m = a.get(0, "message");
          throw TemplateError(m ? to_str(*m) : std::string("raise_exception() called"));
        }));
  g.set("strftime_now", make_fn("strftime_now", [](Interp&, const Args& a, int line) {
          const std::string& fmt = req_str(a, 0, "format", "strftime_now", line);
          if (fmt.size() > 1024) fail(line, "strftime_now(): format longer than 1024 bytes");
          const std::time_t now = std::time(nullptr);
          std::tm tm{};
          localtime_r(&now, &tm);
          std::string buf(256 + fmt.size() * 64, '\0');  // %c is the widest at ~12x
          const std::size_t n = fmt.empty() ? 0 : std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
          buf.resize(n);
          return Value::string(std::move(buf));
        }));
  g.set("namespace", make_fn("namespace", [](Interp& in, const Args& a, int line) {
          auto d = std::make_shared<Dict>();
          for (const auto& p : a.pos) {
            if (p.type != Value::Type::Dict) fail(line, "namespace() takes a dict or name=value arguments");
            for (const auto& [k, v] : p.dict->items) d->set(k, v);
          }
          for (const auto& [k, v] : a.kw) d->set(k, v);
          in.track(d);
          Value ns = Value::make_dict(std::move(d));
          ns.is_namespace = true;
          return ns;
        }));
  g.set("dict", make_fn("dict", [](Interp&, const Args& a, int line) {
          auto d = std::make_shared<Dict>();
          for (const auto& p : a.pos) {
            if (p.type != Value::Type::Dict) fail(line, "dict() takes a dict or name=value arguments");
            for (const auto& [k, v] : p.dict->items) d->set(k, v);
          }
          for (const auto& [k, v] : a.kw) d->set(k, v);
          return Value::make_dict(std::move(d));
        }));
  g.set("range", make_fn("range", [](Interp& in, const Args& a, int line) {
          std::int64_t start = 0, stop = 0, step = 1;
          auto num = [&](std::size_t i) {
            const Value& v = a.pos[i];
            if (v.type == Value::Type::Int) return v.i;
            if (v.type == Value::Type::Bool) return static_cast<std::int64_t>(v.b);
            fail(line, std::string("range() needs integers, got ") + type_name(v));
          };
          if (a.pos.size() == 1) {
            stop = num(0);
          } else if (a.pos.size() == 2 || a.pos.size() == 3) {
            start = num(0);
            stop = num(1);
            if (a.pos.size() == 3) step = num(2);
          } else {
            fail(line, "range() takes 1 to 3 integer arguments");
          }
          if (step == 0) fail(line, "range() step must not be zero");
          List out;
          for (std::int64_t k = start; step > 0 ? k < stop : k > stop;) {
            out.push_back(Value::integer(k));
            in.check_items(out.size(), line);
            if (__builtin_add_overflow(k, step, &k)) break;
          }
          return Value::make_list(std::move(out));
        }));
}

}  // namespace forge::text::jinja
