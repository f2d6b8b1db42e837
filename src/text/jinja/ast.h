// The syntax tree of a parsed template: expressions and statements, each
// node carrying its template line for error messages.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace forge::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,    // value
    Name,       // name
    List,       // args
    Tuple,      // args
    Dict,       // args: key, value, key, value ...
    Attr,       // args[0].name
    Subscript,  // args[0][args[1]]
    Slice,      // args[0][args[1]:args[2]:args[3]] (null parts are omitted)
    Call,       // args[0](args[1..], kwargs)
    Filter,     // args[0] | name(args[1..], kwargs)
    Test,       // args[0] is [not: negate] name(args[1..], kwargs)
    Unary,      // name ("-", "+", "not") args[0]
    Binary,     // args[0] name args[1]: + - * / // % ** ~ and or
    Compare,    // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
    Cond,       // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line;
  Value value;
  std::string name;
  bool negate = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // conds[i] -> bodies[i]; bodies.back() is else when bodies.size() > conds.size()
    For,       // for targets in expr [if cond]: bodies[0], else bodies[1]
    Set,       // set targets = expr, or set targets[0].attr = expr
    SetBlock,  // set targets[0] %} bodies[0] {% endset
    Macro,     // macro name(targets = defaults) bodies[0]
    Break,
    Continue,
  };
  Kind kind;
  int line;
  std::string text;
  std::string name;  // macro name; Set: attribute for `ns.attr`
  ExprPtr expr;
  ExprPtr cond;
  std::vector<ExprPtr> conds;
  std::vector<std::string> targets;
  std::vector<ExprPtr> defaults;  // Macro: one per parameter, null when none
  std::vector<Body> bodies;
};

// A parsed template.
struct Template {
  Body body;
};

}  // namespace forge::text::jinja
