#include "text/added_tokens.h"

#include <algorithm>

#include "text/unicode_tables.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

std::size_t char_start_before(std::string_view s, std::size_t i) {
  std::size_t j = i - 1;
  while (j > 0 && i - j < 4 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
  return j;
}

CharClass class_at(std::string_view s, std::size_t i) {
  const Utf8Step step = utf8_next(s, i);
  return step.cp == kInvalidCodePoint ? CharClass::kOther : char_class(step.cp);
}

bool is_word_char(std::string_view s, std::size_t i) {
  if (s[i] == '_') return true;
  const CharClass c = class_at(s, i);
  return c == CharClass::kLetter || c == CharClass::kNumber;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  for (const auto& t : tokens) {
    if (t.content.empty()) continue;
    tokens_.push_back(t);
    first_byte_[static_cast<unsigned char>(t.content[0])] = true;
  }
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
}

std::optional<AddedTokenMatcher::Match> AddedTokenMatcher::find(std::string_view text,
                                                                std::size_t from) const {
  if (tokens_.empty()) return std::nullopt;
  for (std::size_t pos = from; pos < text.size(); ++pos) {
    if (!first_byte_[static_cast<unsigned char>(text[pos])]) continue;
    if (auto m = match_at(text, from, pos)) return m;
  }
  return std::nullopt;
}

std::optional<AddedTokenMatcher::Match> AddedTokenMatcher::match_at(std::string_view text,
                                                                    std::size_t from,
                                                                    std::size_t pos) const {
  for (const auto& t : tokens_) {
    if (text.substr(pos).substr(0, t.content.size()) != t.content) continue;
    std::size_t begin = pos;
    std::size_t end = pos + t.content.size();
    if (t.single_word) {
      if (begin > 0 && is_word_char(text, char_start_before(text, begin))) continue;
      if (end < text.size() && is_word_char(text, end)) continue;
    }
    if (t.lstrip) {
      while (begin > from) {
        const std::size_t prev = char_start_before(text, begin);
        if (class_at(text, prev) != CharClass::kSpace) break;
        begin = prev;
      }
    }
    if (t.rstrip) {
      while (end < text.size() && class_at(text, end) == CharClass::kSpace) {
        end += utf8_next(text, end).len;
      }
    }
    return Match{begin, end, t.id};
  }
  return std::nullopt;
}

}  // namespace forge::text
