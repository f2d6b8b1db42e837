#include "text/pretokenizer.h"

#include <string>

#include "text/byte_level.h"
#include "text/unicode.h"

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

// Marks for a per-character predicate: each matching character is its own match.
template <class Pred>
std::vector<Mark> char_marks(std::string_view s, Pred pred) {
  std::vector<Mark> out;
  std::size_t gap = 0;
  for (std::size_t i = 0; i < s.size();) {
    const Utf8Step step = utf8_next(s, i);
    if (pred(step.cp)) {
      if (gap < i) out.push_back({gap, i, false});
      out.push_back({i, i + step.len, true});
      gap = i + step.len;
    }
    i += step.len;
  }
  if (gap < s.size()) out.push_back({gap, s.size(), false});
  return out;
}

const Regex& whitespace_regex() {
  static const std::unique_ptr<Regex> re = compile_regex(R"(\w+|[^\w\s]+)");
  return *re;
}

std::string replace_spaces(std::string_view s, const std::string& with) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == ' ') {
      out += with;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

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

void PreTokenizer::split(std::string_view text, bool at_start,
                         const std::function<void(std::string_view)>& emit) const {
  if (text.empty()) return;
  run(0, text, at_start, emit);
}

void PreTokenizer::run(std::size_t step, std::string_view piece, bool at_start,
                       const std::function<void(std::string_view)>& emit) const {
  if (piece.empty()) return;
  if (step == steps_.size()) {
    emit(piece);
    return;
  }
  const PreTokenizeStep& st = steps_[step];
  auto each = [&](const std::vector<Span>& spans) {
    for (const Span& sp : spans) {
      run(step + 1, piece.substr(sp.begin, sp.end - sp.begin), at_start && sp.begin == 0, emit);
    }
  };
  using K = PreTokenizeStep::Kind;
  switch (st.kind) {
    case K::kGpt2Split:
      for (std::size_t i = 0; i < piece.size();) {
        const std::size_t end = gpt2_piece_end(piece, i);
        run(step + 1, piece.substr(i, end - i), at_start && i == 0, emit);
        i = end;
      }
      return;
    case K::kSplit: {
      std::vector<Mark> marks = marks_from_matches(st.pattern.find_all(piece), piece.size());
      if (st.invert) {
        for (Mark& m : marks) m.match = !m.match;
      }
      each(apply_behavior(std::move(marks), st.behavior));
      return;
    }
    case K::kByteLevel: {
      std::string spaced;
      std::string_view s = piece;
      if (st.add_prefix_space && piece.front() != ' ') {
        spaced = " ";
        spaced.append(piece);
        s = spaced;
      }
      const bool raw = raw_byte_level_ && step + 1 == steps_.size();
      auto mapped = [&](std::string_view sub, bool start) {
        if (raw) {
          emit(sub);
        } else {
          run(step + 1, bytes_to_byte_level(sub), start, emit);
        }
      };
      if (!st.use_regex) {
        mapped(s, at_start);
        return;
      }
      for (std::size_t i = 0; i < s.size();) {
        const std::size_t end = gpt2_piece_end(s, i);
        mapped(s.substr(i, end - i), at_start && i == 0);
        i = end;
      }
      return;
    }
    case K::kDigits:
      // Rust's char::is_numeric, as tokenizers' Digits asks: every number
      // character (fullwidth digits, Roman numerals, fractions), not only 0-9.
      each(apply_behavior(char_marks(piece, is_numeric),
                          st.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous));
      return;
    case K::kPunctuation:
      each(apply_behavior(char_marks(piece, is_punctuation), st.behavior));
      return;
    case K::kWhitespaceSplit:
      each(apply_behavior(char_marks(piece, is_whitespace), SplitBehavior::kRemoved));
      return;
    case K::kWhitespace:
      each(text::find_all(whitespace_regex(), piece));
      return;
    case K::kMetaspace: {
      std::string s = replace_spaces(piece, st.replacement);
      const bool starts = s.compare(0, st.replacement.size(), st.replacement) == 0;
      if (!starts && (st.prepend_scheme == PrependScheme::kAlways ||
                      (st.prepend_scheme == PrependScheme::kFirst && at_start))) {
        s.insert(0, st.replacement);
      }
      if (!st.split) {
        run(step + 1, s, at_start, emit);
        return;
      }
      const std::vector<Span> spans = apply_behavior(
          marks_from_matches(Pattern::literal(st.replacement).find_all(s), s.size()),
          SplitBehavior::kMergedWithNext);
      for (const Span& sp : spans) {
        run(step + 1, std::string_view(s).substr(sp.begin, sp.end - sp.begin),
            at_start && sp.begin == 0, emit);
      }
      return;
    }
  }
}

}  // namespace forge::text
