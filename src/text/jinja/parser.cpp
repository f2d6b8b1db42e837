// Recursive-descent Jinja parser (see parser.h). The expression functions
// follow jinja2's parser.py level for level: condexpr, or, and, not, compare,
// math1 (+ -), concat (~), math2 (* / // %), pow, unary, then postfix
// (. [] ()) and filter/test chains.
#include "text/jinja/parser.h"

#include <charconv>
#include <cstdlib>

#include "text/jinja/lexer.h"

namespace forge::text::jinja {
namespace {

ExprPtr node(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

StmtPtr stmt(Stmt::Kind kind, int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->line = line;
  return s;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  std::unique_ptr<Template> run() {
    auto tmpl = std::make_unique<Template>();
    std::string end;
    tmpl->body = parse_body({}, end, 0, "");
    return tmpl;
  }

 private:
  // RAII depth counter: nesting past kMaxParseDepth is an error, not a stack overflow.
  struct Depth {
    explicit Depth(Parser& p) : p(p) {
      if (++p.depth_ > kMaxParseDepth) {
        fail(p.cur().line, "template nests deeper than " + std::to_string(kMaxParseDepth) + " levels");
      }
    }
    ~Depth() { --p.depth_; }
    Parser& p;
  };

  const Token& cur() const { return t_[i_]; }
  const Token& peek(std::size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().kind == Tok::Op && cur().value == op; }
  bool is_name(const char* n) const { return cur().kind == Tok::Name && cur().value == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    ++i_;
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::Text: return "template text";
      case Tok::VarBegin: return "'{{'";
      case Tok::VarEnd: return "'}}'";
      case Tok::BlockBegin: return "'{%'";
      case Tok::BlockEnd: return "'%}'";
      case Tok::Eof: return "the end of the template";
      case Tok::String: return "a string";
      default: return "'" + t.value + "'";
    }
  }
  [[noreturn]] void unexpected(const std::string& wanted) const {
    fail(cur().line, "expected " + wanted + ", found " + describe(cur()));
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) unexpected(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (cur().kind != Tok::Name) unexpected("a name");
    return t_[i_++].value;
  }
  void expect_block_end() {
    if (cur().kind != Tok::BlockEnd) unexpected("'%}'");
    ++i_;
  }

  // ---- statements ----

  // Statements until one of `ends` ({% name %}); the end tag's name (its block
  // still open) goes to `end`. `opener` names the block for the unclosed error.
  Body parse_body(const std::vector<std::string>& ends, std::string& end, int open_line,
                  const std::string& opener) {
    Depth d(*this);
    Body body;
    while (true) {
      const Token& tk = cur();
      if (tk.kind == Tok::Eof) {
        if (ends.empty()) return body;
        fail(open_line, "unclosed '{% " + opener + " %}': no '{% " + ends.back() + " %}' before the end of the template");
      }
      if (tk.kind == Tok::Text) {
        auto s = stmt(Stmt::Kind::Text, tk.line);
        s->text = tk.value;
        body.push_back(std::move(s));
        ++i_;
      } else if (tk.kind == Tok::VarBegin) {
        ++i_;
        auto s = stmt(Stmt::Kind::Output, tk.line);
        s->expr = parse_tuple_expr();
        if (cur().kind != Tok::VarEnd) unexpected("'}}'");
        ++i_;
        body.push_back(std::move(s));
      } else if (tk.kind == Tok::BlockBegin) {
        ++i_;
        if (cur().kind != Tok::Name) unexpected("a tag name");
        const std::string name = cur().value;
        for (const auto& e : ends) {
          if (name == e) {
            ++i_;
            end = name;
            return body;
          }
        }
        parse_statement(body);
      } else {
        unexpected("template text or a tag");
      }
    }
  }

  void parse_statement(Body& body) {
    const Token& tk = cur();
    const std::string name = tk.value;
    const int line = tk.line;
    ++i_;
    if (name == "if") {
      body.push_back(parse_if(line));
    } else if (name == "for") {
      body.push_back(parse_for(line));
    } else if (name == "set") {
      body.push_back(parse_set(line));
    } else if (name == "macro") {
      body.push_back(parse_macro(line));
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail(line, "'" + name + "' outside a for loop");
      expect_block_end();
      body.push_back(stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line));
    } else if (name == "generation") {
      // transformers' {% generation %} marks assistant text for masks; it renders its body.
      expect_block_end();
      std::string end;
      Body inner = parse_body({"endgeneration"}, end, line, "generation");
      expect_block_end();
      for (auto& s : inner) body.push_back(std::move(s));
    } else if (name == "elif" || name == "else" || name.rfind("end", 0) == 0) {
      fail(line, "unexpected '{% " + name + " %}' (no open block it closes)");
    } else {
      fail(line, "unsupported tag '{% " + name + " %}'");
    }
  }

  StmtPtr parse_if(int line) {
    auto s = stmt(Stmt::Kind::If, line);
    s->conds.push_back(parse_expression());
    expect_block_end();
    while (true) {
      std::string end;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, end, line, "if"));
      if (end == "elif") {
        s->conds.push_back(parse_expression());
        expect_block_end();
      } else if (end == "else") {
        expect_block_end();
        s->bodies.push_back(parse_body({"endif"}, end, line, "if"));
        expect_block_end();
        return s;
      } else {
        expect_block_end();
        return s;
      }
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = skip_op("(");
    do {
      names.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr parse_for(int line) {
    auto s = stmt(Stmt::Kind::For, line);
    s->targets = parse_targets();
    if (!skip_name("in")) unexpected("'in'");
    s->expr = parse_or();
    if (skip_name("if")) s->cond = parse_expression();
    if (is_name("recursive")) fail(cur().line, "unsupported: recursive for loops");
    expect_block_end();
    ++loop_depth_;
    std::string end;
    s->bodies.push_back(parse_body({"else", "endfor"}, end, line, "for"));
    --loop_depth_;
    if (end == "else") {
      expect_block_end();
      s->bodies.push_back(parse_body({"endfor"}, end, line, "for"));
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(int line) {
    auto s = stmt(Stmt::Kind::Set, line);
    s->targets.push_back(expect_name());
    if (skip_op(".")) {
      s->name = expect_name();
    } else {
      while (skip_op(",")) s->targets.push_back(expect_name());
    }
    if (cur().kind == Tok::BlockEnd && s->targets.size() == 1 && s->name.empty()) {
      ++i_;
      s->kind = Stmt::Kind::SetBlock;
      std::string end;
      s->bodies.push_back(parse_body({"endset"}, end, line, "set"));
      expect_block_end();
      return s;
    }
    expect_op("=");
    s->expr = parse_tuple_expr();
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = stmt(Stmt::Kind::Macro, line);
    s->name = expect_name();
    expect_op("(");
    while (!skip_op(")")) {
      if (!s->targets.empty()) expect_op(",");
      if (skip_op(")")) break;
      s->targets.push_back(expect_name());
      s->defaults.push_back(skip_op("=") ? parse_expression() : nullptr);
    }
    expect_block_end();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    s->bodies.push_back(parse_body({"endmacro"}, end, line, "macro " + s->name));
    loop_depth_ = saved;
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  // expression [, expression ...] (a bare tuple, as in `{{ a, b }}` or `set x = a, b`).
  ExprPtr parse_tuple_expr() {
    ExprPtr first = parse_expression();
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::Tuple, first->line);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().kind == Tok::VarEnd || cur().kind == Tok::BlockEnd) break;
      t->args.push_back(parse_expression());
    }
    return t;
  }

  ExprPtr parse_expression() {
    Depth d(*this);
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const int line = cur().line;
      ++i_;
      auto c = node(Expr::Kind::Cond, line);
      c->args.push_back(std::move(e));
      c->args.push_back(parse_or());
      c->args.push_back(skip_name("else") ? parse_expression() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto b = node(Expr::Kind::Binary, line);
    b->name = op;
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const int line = t_[i_++].line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const int line = t_[i_++].line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      Depth d(*this);
      auto n = node(Expr::Kind::Unary, t_[i_++].line);
      n->name = "not";
      n->args.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == Tok::Op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                    cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        op = t_[i_++].value;
      } else if (skip_name("in")) {
        op = "in";
      } else if (is_name("not") && peek().kind == Tok::Name && peek().value == "in") {
        i_ += 2;
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::Compare, first->line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = t_[i_++];
      e = binary(op.value, std::move(e), parse_concat(), op.line);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const int line = t_[i_++].line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = t_[i_++];
      e = binary(op.value, std::move(e), parse_pow(), op.line);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const int line = t_[i_++].line;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    Depth d(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& op = t_[i_++];
      e = node(Expr::Kind::Unary, op.line);
      e->name = op.value;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& tk = cur();
    switch (tk.kind) {
      case Tok::Name: {
        ++i_;
        if (tk.value == "true" || tk.value == "True") return literal(Value::boolean(true), tk.line);
        if (tk.value == "false" || tk.value == "False") return literal(Value::boolean(false), tk.line);
        if (tk.value == "none" || tk.value == "None") return literal(Value::none(), tk.line);
        auto n = node(Expr::Kind::Name, tk.line);
        n->name = tk.value;
        return n;
      }
      case Tok::String: {
        std::string s;
        const int line = tk.line;
        while (cur().kind == Tok::String) s += t_[i_++].value;  // "a" "b" is "ab"
        return literal(Value::string(std::move(s)), line);
      }
      case Tok::Int: {
        ++i_;
        std::int64_t v = 0;
        const auto r = std::from_chars(tk.value.data(), tk.value.data() + tk.value.size(), v);
        if (r.ec != std::errc()) fail(tk.line, "integer literal " + tk.value + " is too large");
        return literal(Value::integer(v), tk.line);
      }
      case Tok::Float: {
        ++i_;
        return literal(Value::number(std::strtod(tk.value.c_str(), nullptr)), tk.line);
      }
      case Tok::Op:
        if (tk.value == "(") {
          ++i_;
          if (skip_op(")")) {
            auto t = node(Expr::Kind::Tuple, tk.line);
            return t;
          }
          ExprPtr e = parse_expression();
          if (skip_op(")")) return e;
          auto t = node(Expr::Kind::Tuple, tk.line);
          t->args.push_back(std::move(e));
          while (skip_op(",")) {
            if (is_op(")")) break;
            t->args.push_back(parse_expression());
          }
          expect_op(")");
          return t;
        }
        if (tk.value == "[") {
          ++i_;
          auto l = node(Expr::Kind::List, tk.line);
          while (!skip_op("]")) {
            if (!l->args.empty()) expect_op(",");
            if (skip_op("]")) break;
            l->args.push_back(parse_expression());
          }
          return l;
        }
        if (tk.value == "{") {
          ++i_;
          auto d = node(Expr::Kind::Dict, tk.line);
          while (!skip_op("}")) {
            if (!d->args.empty()) expect_op(",");
            if (skip_op("}")) break;
            d->args.push_back(parse_expression());
            expect_op(":");
            d->args.push_back(parse_expression());
          }
          return d;
        }
        break;
      default:
        break;
    }
    unexpected("an expression");
  }

  ExprPtr literal(Value v, int line) {
    auto n = node(Expr::Kind::Literal, line);
    n->value = std::move(v);
    return n;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (skip_op(".")) {
        if (cur().kind == Tok::Int) {
          auto s = node(Expr::Kind::Subscript, line);
          s->args.push_back(std::move(e));
          s->args.push_back(parse_primary());
          e = std::move(s);
          continue;
        }
        auto a = node(Expr::Kind::Attr, line);
        a->name = expect_name();
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (skip_op("[")) {
        e = parse_subscript(std::move(e), line);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // After '[': x[i] or x[a:b:c].
  ExprPtr parse_subscript(ExprPtr target, int line) {
    Depth d(*this);
    ExprPtr parts[3];
    int n = 0;
    bool slice = false;
    while (true) {
      if (!is_op(":") && !is_op("]")) parts[n] = parse_expression();
      if (skip_op(":")) {
        slice = true;
        if (++n > 2) unexpected("']'");
        continue;
      }
      break;
    }
    expect_op("]");
    if (!slice) {
      if (!parts[0]) fail(line, "empty subscript '[]'");
      auto s = node(Expr::Kind::Subscript, line);
      s->args.push_back(std::move(target));
      s->args.push_back(std::move(parts[0]));
      return s;
    }
    auto s = node(Expr::Kind::Slice, line);
    s->args.push_back(std::move(target));
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  // '(' args ')': positional then name=value.
  void parse_args(Expr& call) {
    expect_op("(");
    bool first = true;
    while (!skip_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (skip_op(")")) break;
      if (cur().kind == Tok::Name && peek().kind == Tok::Op && peek().value == "=") {
        std::string key = t_[i_].value;
        i_ += 2;
        call.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!call.kwargs.empty()) fail(cur().line, "positional argument after a keyword argument");
        call.args.push_back(parse_expression());
      }
    }
  }

  ExprPtr parse_call(ExprPtr callee) {
    Depth d(*this);
    auto c = node(Expr::Kind::Call, cur().line);
    c->args.push_back(std::move(callee));
    parse_args(*c);
    return c;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (skip_op("|")) {
        auto f = node(Expr::Kind::Filter, line);
        f->name = expect_name();
        while (skip_op(".")) f->name += "." + expect_name();
        f->args.push_back(std::move(e));
        if (is_op("(")) parse_args(*f);
        e = std::move(f);
      } else if (skip_name("is")) {
        auto t = node(Expr::Kind::Test, line);
        t->negate = skip_name("not");
        t->name = expect_name();
        while (skip_op(".")) t->name += "." + expect_name();
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          parse_args(*t);
        } else if ((cur().kind == Tok::Name || cur().kind == Tok::String || cur().kind == Tok::Int ||
                    cur().kind == Tok::Float || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          Depth d(*this);
          t->args.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  std::size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

std::unique_ptr<Template> parse(const std::string& source) { return Parser(lex(source)).run(); }

}  // namespace forge::text::jinja
