// Jinja lexer: template source -> tokens, with jinja2's whitespace control as
// transformers configures it (trim_blocks, lstrip_blocks, keep_trailing_newline
// off): `{%-`/`-%}` strip all whitespace on that side, `{%+` keeps the line's
// indentation, a block or comment tag drops the newline right after it, and
// the spaces before a block or comment tag that starts its line are dropped.
#pragma once
#include <string>
#include <vector>

namespace forge::text::jinja {

enum class Tok {
  Text,        // literal template text (value)
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifier or keyword (value)
  String,      // string literal, escapes decoded (value)
  Int,         // integer literal (value: digits)
  Float,       // float literal (value)
  Op,          // operator or punctuation (value): + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  Eof,
};

struct Token {
  Tok kind;
  std::string value;
  int line;
};

// Throws TemplateError naming the line of an unterminated tag, comment or string.
std::vector<Token> lex(const std::string& source);

// Throws TemplateError "[chat-template] line N: message" (no line when line <= 0).
[[noreturn]] void fail(int line, const std::string& message);

}  // namespace forge::text::jinja
