// Jinja lexer (see lexer.h). Why a hand-written Jinja at all: Debian packages no
// C++ Jinja engine that covers what released chat templates use (namespace(),
// loop controls, Python string methods, tojson with indent), and the template
// must render byte for byte as Python's jinja2 does, so forge carries its own.
#include "text/jinja/lexer.h"

#include <cctype>

#include "forge/chat_template.h"
#include "text/utf8.h"

namespace forge::text::jinja {

void fail(int line, const std::string& message) {
  if (line <= 0) throw TemplateError("[chat-template] " + message);
  throw TemplateError("[chat-template] line " + std::to_string(line) + ": " + message);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int count_lines(const std::string& s, std::size_t from, std::size_t to) {
  int n = 0;
  for (std::size_t i = from; i < to && i < s.size(); ++i) n += s[i] == '\n';
  return n;
}

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {
    // keep_trailing_newline=False: one trailing newline is not part of the output.
    if (!src_.empty() && src_.back() == '\n') {
      src_.pop_back();
      if (!src_.empty() && src_.back() == '\r') src_.pop_back();
    }
  }

  std::vector<Token> run() {
    bool line_starting = true;  // text begins a line (start, or a tag ate the newline)
    bool strip_next = false;    // previous tag ended with '-'
    while (pos_ < src_.size()) {
      std::size_t open = find_open(pos_);
      std::string text = src_.substr(pos_, open - pos_);
      const int text_line = line_;
      if (strip_next) {
        std::size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
      }
      if (open == src_.size()) {
        emit_text(text, text_line);
        line_ += count_lines(src_, pos_, open);
        break;
      }
      const char kind = src_[open + 1];  // '{', '%' or '#'
      const char mark = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (mark == '-') {
        std::size_t e = text.size();
        while (e > 0 && is_space(text[e - 1])) --e;
        text.resize(e);
      } else if (mark != '+' && kind != '{') {
        // lstrip_blocks: drop the indentation before a tag that starts its line.
        const std::size_t nl = text.rfind('\n');
        const std::size_t l = nl == std::string::npos ? 0 : nl + 1;
        if (l > 0 || line_starting) {
          bool blank = l < text.size();
          for (std::size_t k = l; k < text.size(); ++k) blank = blank && is_space(text[k]);
          if (blank) text.resize(l);
        }
      }
      emit_text(text, text_line);
      line_ += count_lines(src_, pos_, open);
      pos_ = open + 2 + ((mark == '-' || mark == '+') ? 1 : 0);
      bool trimmed_newline = false;
      if (kind == '#') {
        const std::size_t end = src_.find("#}", pos_);
        if (end == std::string::npos) fail(line_, "unclosed comment '{#'");
        line_ += count_lines(src_, pos_, end + 2);
        const bool minus = end > pos_ && src_[end - 1] == '-';
        const bool plus = end > pos_ && src_[end - 1] == '+';
        pos_ = end + 2;
        strip_next = minus;
        if (!minus && !plus) trimmed_newline = eat_newline();
      } else if (kind == '{') {
        out_.push_back({Tok::VarBegin, "", line_});
        strip_next = lex_tag("}}");
      } else {
        const int tag_line = line_;
        const std::size_t start = out_.size();
        out_.push_back({Tok::BlockBegin, "", line_});
        char end_mark = 0;
        strip_next = lex_tag("%}", &end_mark);
        if (out_.size() == start + 3 && out_[start + 1].kind == Tok::Name && out_[start + 1].value == "raw") {
          // The raw body starts right after its tag (no trim_blocks there).
          out_.resize(start);
          trimmed_newline = lex_raw(tag_line, strip_next);
          strip_next = false;
        } else if (!strip_next && end_mark != '+') {
          trimmed_newline = eat_newline();
        }
      }
      line_starting = trimmed_newline;
    }
    out_.push_back({Tok::Eof, "", line_});
    return std::move(out_);
  }

 private:
  std::size_t find_open(std::size_t from) const {
    for (std::size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  void emit_text(const std::string& text, int line) {
    if (!text.empty()) out_.push_back({Tok::Text, text, line});
  }

  bool eat_newline() {
    if (pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      return true;
    }
    if (pos_ + 1 < src_.size() && src_[pos_] == '\r' && src_[pos_ + 1] == '\n') {
      pos_ += 2;
      ++line_;
      return true;
    }
    return false;
  }

  // {% raw %} ... {% endraw %}: the body is text; returns whether the newline
  // after endraw was trimmed.
  bool lex_raw(int tag_line, bool strip_front) {
    if (strip_front) {
      while (pos_ < src_.size() && is_space(src_[pos_])) line_ += src_[pos_++] == '\n';
    }
    for (std::size_t i = pos_; i + 1 < src_.size(); ++i) {
      if (src_[i] != '{' || src_[i + 1] != '%') continue;
      std::size_t k = i + 2;
      const bool minus = k < src_.size() && src_[k] == '-';
      if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) ++k;
      while (k < src_.size() && is_space(src_[k])) ++k;
      if (src_.compare(k, 6, "endraw") != 0) continue;
      k += 6;
      while (k < src_.size() && is_space(src_[k])) ++k;
      bool end_minus = false, end_plus = false;
      if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) {
        end_minus = src_[k] == '-';
        end_plus = src_[k++] == '+';
      }
      if (src_.compare(k, 2, "%}") != 0) continue;
      std::string body = src_.substr(pos_, i - pos_);
      if (minus) {
        while (!body.empty() && is_space(body.back())) body.pop_back();
      } else if (src_[i + 2] != '+') {
        // lstrip_blocks applies to the endraw tag as to any block tag.
        const std::size_t nl = body.rfind('\n');
        const std::size_t l = nl == std::string::npos ? 0 : nl + 1;
        bool blank = l > 0 && l < body.size();
        for (std::size_t k = l; blank && k < body.size(); ++k) blank = body[k] == ' ' || body[k] == '\t';
        if (blank) body.resize(l);
      }
      emit_text(body, line_);
      line_ += count_lines(src_, pos_, k + 2);
      pos_ = k + 2;
      if (end_minus) {
        while (pos_ < src_.size() && is_space(src_[pos_])) line_ += src_[pos_++] == '\n';
        return false;
      }
      return end_plus ? false : eat_newline();
    }
    fail(tag_line, "unclosed '{% raw %}' block (no '{% endraw %}')");
  }

  // Tokens up to the closing `close`; returns whether it was "-close" (strip
  // what follows). *end_mark gets '+' or '-' when one preceded the closer.
  bool lex_tag(const char* close, char* end_mark = nullptr) {
    const int start_line = line_;
    int depth = 0;  // open brackets: "}}" inside a dict literal is two braces
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) line_ += src_[pos_++] == '\n';
      if (pos_ >= src_.size()) {
        fail(start_line, std::string("unclosed tag: no '") + close + "' before the end of the template");
      }
      const char c = src_[pos_];
      if (depth == 0 || close[0] == '%') {
        for (char m : {'-', '+'}) {
          if (c == m && src_.compare(pos_ + 1, 2, close) == 0 && (m == '-' || close[0] == '%')) {
            pos_ += 3;
            out_.push_back({close[0] == '}' ? Tok::VarEnd : Tok::BlockEnd, "", line_});
            if (end_mark) *end_mark = m;
            return m == '-';
          }
        }
        if (src_.compare(pos_, 2, close) == 0) {
          pos_ += 2;
          out_.push_back({close[0] == '}' ? Tok::VarEnd : Tok::BlockEnd, "", line_});
          return false;
        }
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t e = pos_;
        while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        out_.push_back({Tok::Name, src_.substr(pos_, e - pos_), line_});
        pos_ = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static const char* const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%",
                                          "~",  "<",  ">",  "=",  ".",  ",", ":", "|", "(", ")", "[",
                                          "]",  "{",  "}"};
        bool found = false;
        for (const char* op : ops) {
          const std::size_t n = std::char_traits<char>::length(op);
          if (src_.compare(pos_, n, op) == 0) {
            if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++depth;
            if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && depth > 0) --depth;
            out_.push_back({Tok::Op, op, line_});
            pos_ += n;
            found = true;
            break;
          }
        }
        if (!found) fail(line_, std::string("unexpected character '") + c + "' in a tag");
      }
    }
  }

  void lex_number() {
    std::size_t e = pos_;
    std::string digits;
    bool is_float = false;
    auto eat_digits = [&] {
      while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    };
    eat_digits();
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      digits += src_[e++];
      eat_digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      std::size_t k = e + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        digits += 'e';
        digits.append(src_, e + 1, k - e - 1);
        e = k;
        eat_digits();
      }
    }
    out_.push_back({is_float ? Tok::Float : Tok::Int, digits, line_});
    pos_ = e;
  }

  // Python string literal escapes: \n \t \r \\ \' \" \xNN \uNNNN \UNNNNNNNN;
  // an unknown escape keeps its backslash, as Python does.
  void lex_string(char quote) {
    const int start_line = line_;
    std::string v;
    std::size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) fail(start_line, "unterminated string literal");
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || i + 1 >= src_.size()) {
        v += c;
        ++i;
        continue;
      }
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': v += '\n'; break;
        case 't': v += '\t'; break;
        case 'r': v += '\r'; break;
        case '0': v += '\0'; break;
        case 'a': v += '\a'; break;
        case 'b': v += '\b'; break;
        case 'f': v += '\f'; break;
        case 'v': v += '\v'; break;
        case '\\': v += '\\'; break;
        case '\'': v += '\''; break;
        case '"': v += '"'; break;
        case '\n': ++line_; break;
        case 'x':
        case 'u':
        case 'U': {
          const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          std::uint32_t cp = 0;
          bool ok = i + n <= src_.size();
          for (std::size_t k = 0; ok && k < n; ++k) {
            const char h = src_[i + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) ok = false;
            cp = cp * 16 + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                           ? h - '0'
                                                           : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          if (!ok || cp > 0x10FFFF) fail(line_, std::string("bad \\") + e + " escape in a string literal");
          utf8_append(v, cp);
          i += n;
          break;
        }
        default:
          v += '\\';
          v += e;
      }
    }
    out_.push_back({Tok::String, v, start_line});
    pos_ = i + 1;
  }

  std::string src_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex(const std::string& source) { return Lexer(source).run(); }

}  // namespace forge::text::jinja
