// The regular-expression engine behind Split / Replace patterns, kept behind a
// small interface so that a browser build can supply the page's own RegExp
// (Unicode mode has \p{..}, lookahead and inline flags) instead. The native
// build uses Oniguruma (regex_onig.cpp), the engine Hugging Face tokenizers uses,
// with its Ruby syntax and UTF-8 text.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace forge::text {

struct Span {
  std::size_t begin, end;  // bytes [begin, end)
};

class Regex {
 public:
  virtual ~Regex() = default;
  // The leftmost match in text[from..] (lookbehind and ^ see all of `text`).
  virtual std::optional<Span> find(std::string_view text, std::size_t from) const = 0;
};

// ValueError "[regex] ..." naming the pattern and the engine's complaint.
std::unique_ptr<Regex> compile_regex(std::string_view pattern);

// Successive non-overlapping matches, as Oniguruma's iterator yields them: an
// empty match right where the previous match ended is skipped by one character.
std::vector<Span> find_all(const Regex& re, std::string_view text);

}  // namespace forge::text
