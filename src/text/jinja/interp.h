// Jinja evaluator: runs a parsed Template over variables and returns the text.
// Scopes follow jinja2: a for loop's body and a macro call get their own
// frame (so `set` inside a loop does not leak out; namespaces exist for that),
// `if` does not. Work is bounded so no input can hang or exhaust memory: a
// step budget, a macro call depth, and a size cap on every string built.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace forge::text::jinja {

inline constexpr std::int64_t kMaxSteps = 10'000'000;       // expression and statement evaluations
inline constexpr int kMaxCallDepth = 64;                    // nested macro calls
inline constexpr std::size_t kMaxStringBytes = 64u << 20;   // any string, the output included
inline constexpr std::size_t kMaxListItems = 1u << 20;      // any list built by the template

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  Value* find(const std::string& name);
  void set(const std::string& name, Value v);
};

class Interp {
 public:
  // `globals`: the render variables (messages, bos_token ...) and builtins.
  explicit Interp(std::shared_ptr<Frame> globals, std::int64_t max_steps = kMaxSteps);
  ~Interp();  // breaks the reference cycles macros and namespaces can form

  std::string render(const Template& t);

  Value eval(const Expr& e);
  void step(int line);
  // Work proportional to a size (items copied, bytes scanned / 64) counts
  // against the same budget as steps, so big values cannot make it hang.
  void charge(std::size_t units, int line);
  void check_size(std::size_t bytes, int line) const;
  void check_items(std::size_t n, int line) const;
  // Registers a namespace so its attributes are released with the interpreter.
  void track(const std::shared_ptr<Dict>& ns) { namespaces_.push_back(ns); }
  // jinja2's getattr: a str/dict method, a dict key, else undefined.
  Value eval_attr(const Value& obj, const std::string& name, int line);

  // Calls `callee` (a Value of type Callable) with evaluated arguments.
  Value call(const Value& callee, const Args& args, int line);
  // Runs a macro's body in a frame over the scopes it was defined in.
  Value call_macro(const Stmt& def, const std::vector<std::shared_ptr<Frame>>& scopes, const Args& args,
                   int line);

 private:
  enum class Flow { Normal, Break, Continue };
  Flow exec(const Body& body, std::string& out);
  Flow exec_stmt(const Stmt& s, std::string& out);
  void exec_for(const Stmt& s, std::string& out);
  void exec_set(const Stmt& s, Value v);
  void define_macro(const Stmt& s);
  void assign(const std::vector<std::string>& targets, const Value& v, int line);
  Value lookup(const std::string& name);
  std::shared_ptr<Frame> push_frame();

  Value eval_binary(const Expr& e);
  Value eval_compare(const Expr& e);
  Value eval_subscript(const Value& obj, const Value& key, int line);
  Value eval_slice(const Expr& e);
  Args eval_args(const Expr& e, std::size_t first);

  std::vector<std::shared_ptr<Frame>> stack_;       // innermost last; [0] the globals
  std::vector<std::shared_ptr<Frame>> all_frames_;  // every frame made, for ~Interp
  std::vector<std::shared_ptr<Dict>> namespaces_;
  std::int64_t steps_ = 0;
  std::int64_t max_steps_;
  int call_depth_ = 0;
};

// The items a for loop visits: a list's items, a dict's keys, a string's
// characters; nothing for undefined; other types are errors.
List iterate(const Value& v, int line);
// Python's ordering (-1, 0, 1) of numbers, strings and lists; other pairs are errors.
int py_order(const Value& a, const Value& b, int line);
// The error an undefined value raises when it is used (its name or missing attribute).
[[noreturn]] void undefined_error(const Value& v, int line);

// Filters and tests by name (filters.cpp); unknown names are errors.
Value apply_filter(Interp& in, const std::string& name, const Value& v, const Args& args, int line);
bool apply_test(Interp& in, const std::string& name, const Value& v, const Args& args, int line);
// `obj.name` where obj is a str or dict and name one of its methods (methods.cpp);
// undefined when there is no such method.
Value bound_method(const Value& obj, const std::string& name);
// The render's global functions: raise_exception, strftime_now, namespace, range, dict.
void add_builtins(Frame& globals);
// Python's json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) (tojson.cpp).
// `indent`: null for one line, else the string repeated per level.
std::string to_json(const Value& v, const std::optional<std::string>& indent, bool sort_keys, const std::string& item_sep,
                    const std::string& key_sep, int line);

}  // namespace forge::text::jinja
