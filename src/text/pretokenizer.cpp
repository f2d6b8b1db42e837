#include "text/pretokenizer.h"

#include <string>

#include "text/unicode_tables.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

struct CharAt {
  CharClass cls;
  std::size_t len;
};

// Class and byte length of the character at s[i]; invalid UTF-8 bytes are kOther.
CharAt char_at(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return {char_class(b), 1};
  const Utf8Step step = utf8_next(s, i);
  if (step.cp == kInvalidCodePoint) return {CharClass::kOther, step.len};
  return {char_class(step.cp), step.len};
}

// Length of a contraction ('s 't 're 've 'm 'll 'd) at s[i], or 0.
std::size_t contraction_length(std::string_view s, std::size_t i) {
  if (s[i] != '\'' || i + 1 >= s.size()) return 0;
  const char c = s[i + 1];
  if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
  if (i + 2 >= s.size()) return 0;
  const char d = s[i + 2];
  if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 3;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::size_t gpt2_piece_end(std::string_view s, std::size_t i) {
  if (std::size_t n = contraction_length(s, i)) return i + n;
  CharAt first = char_at(s, i);
  std::size_t j = i;
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional ASCII space, then a run of one class.
  if (s[i] == ' ' && i + 1 < s.size()) {
    const CharAt next = char_at(s, i + 1);
    if (next.cls != CharClass::kSpace) {
      first = next;
      j = i + 1;
    }
  }
  if (first.cls != CharClass::kSpace) {
    j += first.len;
    while (j < s.size()) {
      const CharAt c = char_at(s, j);
      if (c.cls != first.cls) break;
      j += c.len;
    }
    return j;
  }
  // `\s+(?!\S)|\s+`: a whitespace run; if a non-space follows, leave the run's
  // last character to start the next piece (unless the run is one character).
  std::size_t last = i;
  j = i + first.len;
  while (j < s.size()) {
    const CharAt c = char_at(s, j);
    if (c.cls != CharClass::kSpace) return last > i ? last : j;
    last = j;
    j += c.len;
  }
  return j;
}

void PreTokenizer::split(std::string_view text,
                         const std::function<void(std::string_view)>& emit) const {
  if (text.empty()) return;
  run(0, text, emit);
}

void PreTokenizer::run(std::size_t step, std::string_view piece,
                       const std::function<void(std::string_view)>& emit) const {
  if (step == steps_.size()) {
    emit(piece);
    return;
  }
  switch (steps_[step]) {
    case PreTokenizeStep::kGpt2Split:
      for (std::size_t i = 0; i < piece.size();) {
        const std::size_t end = gpt2_piece_end(piece, i);
        run(step + 1, piece.substr(i, end - i), emit);
        i = end;
      }
      return;
    case PreTokenizeStep::kDigits:
    case PreTokenizeStep::kDigitRuns: {
      const bool runs = steps_[step] == PreTokenizeStep::kDigitRuns;
      for (std::size_t i = 0; i < piece.size();) {
        std::size_t end = i + 1;
        if (is_digit(piece[i])) {
          while (runs && end < piece.size() && is_digit(piece[end])) ++end;
        } else {
          while (end < piece.size() && !is_digit(piece[end])) ++end;
        }
        run(step + 1, piece.substr(i, end - i), emit);
        i = end;
      }
      return;
    }
    case PreTokenizeStep::kPrefixSpace: {
      if (piece.front() == ' ') {
        run(step + 1, piece, emit);
        return;
      }
      std::string spaced(1, ' ');
      spaced.append(piece);
      run(step + 1, spaced, emit);
      return;
    }
  }
}

}  // namespace forge::text
