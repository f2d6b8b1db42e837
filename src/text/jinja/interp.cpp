// Jinja evaluator (see interp.h): statements, expressions, scopes, macros;
// the operators are in operators.cpp.
#include "text/jinja/interp.h"

#include <cmath>
#include <limits>

#include "text/jinja/lexer.h"

namespace forge::text::jinja {

Value* Frame::find(const std::string& name) {
  for (auto& [k, v] : vars) {
    if (k == name) return &v;
  }
  return nullptr;
}

void Frame::set(const std::string& name, Value v) {
  if (Value* old = find(name)) {
    *old = std::move(v);
  } else {
    vars.emplace_back(name, std::move(v));
  }
}

void undefined_error(const Value& v, int line) {
  fail(line, v.str().empty() ? std::string("value is undefined") : v.str());
}

List iterate(const Value& v, int line) {
  switch (v.type) {
    case Value::Type::Undefined: return {};
    case Value::Type::List: return *v.list;
    case Value::Type::Dict: {
      if (v.is_namespace) break;
      List keys;
      for (const auto& [k, x] : v.dict->items) keys.push_back(Value::string(k));
      return keys;
    }
    case Value::Type::String: {
      List chars;
      for (auto& c : code_points(v.str())) chars.push_back(Value::string(std::move(c)));
      return chars;
    }
    default: break;
  }
  fail(line, std::string("'") + type_name(v) + "' object is not iterable");
}

Interp::Interp(std::shared_ptr<Frame> globals, std::int64_t max_steps) : max_steps_(max_steps) {
  all_frames_.push_back(globals);
  stack_.push_back(std::move(globals));
}

Interp::~Interp() {
  for (auto& f : all_frames_) f->vars.clear();
  for (auto& d : namespaces_) d->items.clear();
}

std::shared_ptr<Frame> Interp::push_frame() {
  auto f = std::make_shared<Frame>();
  all_frames_.push_back(f);
  stack_.push_back(f);
  return f;
}

void Interp::step(int line) { charge(1, line); }

void Interp::charge(std::size_t units, int line) {
  steps_ += static_cast<std::int64_t>(std::min<std::size_t>(units, static_cast<std::size_t>(max_steps_) + 1));
  if (steps_ > max_steps_) {
    fail(line, "the template ran past " + std::to_string(max_steps_) + " evaluation steps (an endless loop?)");
  }
}

void Interp::check_size(std::size_t bytes, int line) const {
  if (bytes > kMaxStringBytes) {
    fail(line, "a string grew past " + std::to_string(kMaxStringBytes >> 20) + " MiB");
  }
}

void Interp::check_items(std::size_t n, int line) const {
  if (n > kMaxListItems) fail(line, "a list grew past " + std::to_string(kMaxListItems) + " items");
}

std::string Interp::render(const Template& t) {
  push_frame();
  std::string out;
  exec(t.body, out);
  return out;
}

Value Interp::lookup(const std::string& name) {
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
    if (Value* v = (*it)->find(name)) return *v;
  }
  return Value::undefined("'" + name + "' is undefined");
}

// ---- statements ----

Interp::Flow Interp::exec(const Body& body, std::string& out) {
  for (const auto& s : body) {
    const Flow f = exec_stmt(*s, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interp::Flow Interp::exec_stmt(const Stmt& s, std::string& out) {
  step(s.line);
  switch (s.kind) {
    case Stmt::Kind::Text:
      out += s.text;
      check_size(out.size(), s.line);
      break;
    case Stmt::Kind::Output: {
      const Value v = eval(*s.expr);
      if (v.is_list() || v.is_dict()) charge(v.is_list() ? v.list->size() : v.dict->items.size(), s.line);
      out += to_str(v);
      check_size(out.size(), s.line);
      break;
    }
    case Stmt::Kind::If:
      for (std::size_t k = 0; k < s.conds.size(); ++k) {
        if (truthy(eval(*s.conds[k]))) return exec(s.bodies[k], out);
      }
      if (s.bodies.size() > s.conds.size()) return exec(s.bodies.back(), out);
      break;
    case Stmt::Kind::For: exec_for(s, out); break;
    case Stmt::Kind::Set: exec_set(s, eval(*s.expr)); break;
    case Stmt::Kind::SetBlock: {
      std::string captured;
      const Flow f = exec(s.bodies[0], captured);
      check_size(captured.size(), s.line);
      assign(s.targets, Value::string(std::move(captured)), s.line);
      if (f != Flow::Normal) return f;
      break;
    }
    case Stmt::Kind::Macro: define_macro(s); break;
    case Stmt::Kind::Break: return Flow::Break;
    case Stmt::Kind::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

void Interp::assign(const std::vector<std::string>& targets, const Value& v, int line) {
  if (targets.size() == 1) {
    stack_.back()->set(targets[0], v);
    return;
  }
  const List items = iterate(v, line);
  if (items.size() != targets.size()) {
    fail(line, "cannot unpack " + std::to_string(items.size()) + " values into " +
                   std::to_string(targets.size()) + " names");
  }
  for (std::size_t k = 0; k < targets.size(); ++k) stack_.back()->set(targets[k], items[k]);
}

void Interp::exec_set(const Stmt& s, Value v) {
  if (s.name.empty()) {
    assign(s.targets, v, s.line);
    return;
  }
  const Value ns = lookup(s.targets[0]);
  if (ns.type != Value::Type::Dict || !ns.is_namespace) {
    fail(s.line, "cannot assign attribute '" + s.name + "' on '" + s.targets[0] + "' (a " + type_name(ns) +
                     ", not a namespace())");
  }
  ns.dict->set(s.name, std::move(v));
}

void Interp::exec_for(const Stmt& s, std::string& out) {
  const Value seq = eval(*s.expr);
  List items = iterate(seq, s.expr->line);
  charge(items.size(), s.line);
  auto frame = push_frame();
  struct Pop {
    std::vector<std::shared_ptr<Frame>>& st;
    ~Pop() { st.pop_back(); }
  } pop{stack_};
  if (s.cond) {  // `for x in xs if cond`: filtered before the loop counts
    List kept;
    for (auto& item : items) {
      step(s.line);
      assign(s.targets, item, s.line);
      if (truthy(eval(*s.cond))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const std::int64_t n = static_cast<std::int64_t>(items.size());
  // One `loop` object per loop, updated in place each iteration (no allocations per item).
  auto loop = std::make_shared<Dict>();
  auto index = std::make_shared<std::int64_t>(0);
  auto cycle = std::make_shared<Callable>();
  cycle->name = "loop.cycle";
  cycle->fn = [index](Interp&, const Args& a, int line) -> Value {
    if (a.pos.empty()) fail(line, "loop.cycle() needs at least one value");
    return a.pos[static_cast<std::size_t>(*index) % a.pos.size()];
  };
  for (const char* key : {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0",
                          "previtem", "nextitem"}) {
    loop->items.emplace_back(key, Value());
  }
  loop->set("cycle", Value::callable(std::move(cycle)));
  loop->items[6].second = Value::integer(n);
  loop->items[7].second = Value::integer(1);
  loop->items[8].second = Value::integer(0);
  frame->set("loop", Value::make_dict(loop));
  const Value no_prev = Value::undefined("there is no previous item");
  const Value no_next = Value::undefined("there is no next item");
  for (std::int64_t k = 0; k < n; ++k) {
    step(s.line);
    *index = k;
    auto& it = loop->items;
    it[0].second = Value::integer(k + 1);
    it[1].second = Value::integer(k);
    it[2].second = Value::integer(n - k);
    it[3].second = Value::integer(n - k - 1);
    it[4].second = Value::boolean(k == 0);
    it[5].second = Value::boolean(k == n - 1);
    it[9].second = k > 0 ? items[static_cast<std::size_t>(k - 1)] : no_prev;
    it[10].second = k + 1 < n ? items[static_cast<std::size_t>(k + 1)] : no_next;
    assign(s.targets, items[static_cast<std::size_t>(k)], s.line);
    if (exec(s.bodies[0], out) == Flow::Break) break;
  }
  if (n == 0 && s.bodies.size() > 1) exec(s.bodies[1], out);
}

void Interp::define_macro(const Stmt& s) {
  auto c = std::make_shared<Callable>();
  c->name = s.name;
  const Stmt* def = &s;
  std::vector<std::shared_ptr<Frame>> scopes = stack_;
  c->fn = [def, scopes](Interp& in, const Args& a, int line) { return in.call_macro(*def, scopes, a, line); };
  stack_.back()->set(s.name, Value::callable(std::move(c)));
}

Value Interp::call_macro(const Stmt& def, const std::vector<std::shared_ptr<Frame>>& scopes, const Args& a,
                         int line) {
  if (call_depth_ >= kMaxCallDepth) {
    fail(line, "macro '" + def.name + "' nested past " + std::to_string(kMaxCallDepth) + " calls");
  }
  if (a.pos.size() > def.targets.size()) {
    fail(line, "macro '" + def.name + "' takes " + std::to_string(def.targets.size()) + " arguments, got " +
                   std::to_string(a.pos.size()));
  }
  for (const auto& [k, v] : a.kw) {
    bool known = false;
    for (const auto& t : def.targets) known = known || t == k;
    if (!known) fail(line, "macro '" + def.name + "' has no parameter '" + k + "'");
  }
  std::vector<std::shared_ptr<Frame>> saved = std::move(stack_);
  stack_ = scopes;
  ++call_depth_;
  struct Restore {
    Interp& in;
    std::vector<std::shared_ptr<Frame>>& saved;
    ~Restore() {
      in.stack_ = std::move(saved);
      --in.call_depth_;
    }
  } restore{*this, saved};
  auto frame = push_frame();
  for (std::size_t k = 0; k < def.targets.size(); ++k) {
    if (const Value* v = a.get(k, def.targets[k])) {
      frame->set(def.targets[k], *v);
    } else if (def.defaults[k]) {
      frame->set(def.targets[k], eval(*def.defaults[k]));
    } else {
      frame->set(def.targets[k], Value::undefined("'" + def.targets[k] + "' is undefined"));
    }
  }
  std::string out;
  exec(def.bodies[0], out);
  return Value::string(std::move(out));
}

Value Interp::call(const Value& callee, const Args& args, int line) {
  if (callee.type == Value::Type::Callable) return callee.fn->fn(*this, args, line);
  if (callee.is_undefined()) undefined_error(callee, line);
  fail(line, std::string("'") + type_name(callee) + "' object is not callable");
}

// ---- expressions ----

Args Interp::eval_args(const Expr& e, std::size_t first) {
  Args a;
  for (std::size_t k = first; k < e.args.size(); ++k) a.pos.push_back(eval(*e.args[k]));
  for (const auto& [name, x] : e.kwargs) a.kw.emplace_back(name, eval(*x));
  return a;
}

Value Interp::eval(const Expr& e) {
  step(e.line);
  switch (e.kind) {
    case Expr::Kind::Literal: return e.value;
    case Expr::Kind::Name: return lookup(e.name);
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      List l;
      for (const auto& x : e.args) l.push_back(eval(*x));
      return Value::make_list(std::move(l), e.kind == Expr::Kind::Tuple);
    }
    case Expr::Kind::Dict: {
      auto d = std::make_shared<Dict>();
      for (std::size_t k = 0; k + 1 < e.args.size(); k += 2) {
        const Value key = eval(*e.args[k]);
        if (!key.is_string()) fail(e.line, std::string("dict keys must be strings, not ") + type_name(key));
        d->set(key.str(), eval(*e.args[k + 1]));
      }
      return Value::make_dict(std::move(d));
    }
    case Expr::Kind::Attr: return eval_attr(eval(*e.args[0]), e.name, e.line);
    case Expr::Kind::Subscript: {
      const Value obj = eval(*e.args[0]);
      return eval_subscript(obj, eval(*e.args[1]), e.line);
    }
    case Expr::Kind::Slice: return eval_slice(e);
    case Expr::Kind::Call: {
      const Value callee = eval(*e.args[0]);
      return call(callee, eval_args(e, 1), e.line);
    }
    case Expr::Kind::Filter: {
      const Value v = eval(*e.args[0]);
      return apply_filter(*this, e.name, v, eval_args(e, 1), e.line);
    }
    case Expr::Kind::Test: {
      const Value v = eval(*e.args[0]);
      return Value::boolean(apply_test(*this, e.name, v, eval_args(e, 1), e.line) != e.negate);
    }
    case Expr::Kind::Unary: {
      const Value v = eval(*e.args[0]);
      if (e.name == "not") return Value::boolean(!truthy(v));
      if (v.is_undefined()) undefined_error(v, e.line);
      if (v.type == Value::Type::Float) return Value::number(e.name == "-" ? -v.f : v.f);
      if (v.type == Value::Type::Int || v.type == Value::Type::Bool) {
        const std::int64_t x = v.type == Value::Type::Bool ? v.b : v.i;
        if (e.name == "+") return Value::integer(x);
        if (x == std::numeric_limits<std::int64_t>::min()) fail(e.line, "integer overflow");
        return Value::integer(-x);
      }
      fail(e.line, "bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
    }
    case Expr::Kind::Binary: return eval_binary(e);
    case Expr::Kind::Compare: return eval_compare(e);
    case Expr::Kind::Cond:
      if (truthy(eval(*e.args[1]))) return eval(*e.args[0]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined("the inline if had no else");
  }
  fail(e.line, "unknown expression");
}

Value Interp::eval_attr(const Value& obj, const std::string& name, int line) {
  switch (obj.type) {
    case Value::Type::Undefined: undefined_error(obj, line);
    case Value::Type::Dict: {
      if (!obj.is_namespace) {
        Value m = bound_method(obj, name);
        charge(obj.dict->items.size(), line);
        if (!m.is_undefined()) return m;
      }
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined(std::string("'") + (obj.is_namespace ? "Namespace" : "dict object") +
                              "' has no attribute '" + name + "'");
    }
    case Value::Type::String: {
      Value m = bound_method(obj, name);
      charge(obj.str().size() / 64, line);
      if (!m.is_undefined()) return m;
      break;
    }
    default: break;
  }
  return Value::undefined(std::string("'") + type_name(obj) + " object' has no attribute '" + name + "'");
}

Value Interp::eval_subscript(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) undefined_error(obj, line);
  const bool int_key = key.type == Value::Type::Int || key.type == Value::Type::Bool;
  const std::int64_t idx = key.type == Value::Type::Bool ? key.b : key.i;
  if (obj.type == Value::Type::List && int_key) {
    const std::int64_t n = static_cast<std::int64_t>(obj.list->size());
    const std::int64_t k = idx < 0 ? idx + n : idx;
    if (k >= 0 && k < n) return (*obj.list)[static_cast<std::size_t>(k)];
    return Value::undefined(std::string("'") + type_name(obj) + " object' has no element " + std::to_string(idx));
  }
  if (obj.type == Value::Type::String && int_key) {
    charge(obj.str().size() / 64, line);
    const auto cps = code_points(obj.str());
    const std::int64_t n = static_cast<std::int64_t>(cps.size());
    const std::int64_t k = idx < 0 ? idx + n : idx;
    if (k >= 0 && k < n) return Value::string(cps[static_cast<std::size_t>(k)]);
    return Value::undefined("'str object' has no element " + std::to_string(idx));
  }
  if (key.is_string()) {
    if (obj.type == Value::Type::Dict) {
      if (const Value* v = obj.dict->find(key.str())) return *v;
    }
    return eval_attr(obj, key.str(), line);
  }
  return Value::undefined(std::string("'") + type_name(obj) + " object' has no element " + to_repr(key));
}

}  // namespace forge::text::jinja
