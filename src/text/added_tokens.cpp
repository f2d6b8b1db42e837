#include "text/added_tokens.h"

#include <algorithm>

#include "text/unicode.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

std::size_t char_start_before(std::string_view s, std::size_t i) {
  std::size_t j = i - 1;
  while (j > 0 && i - j < 4 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
  return j;
}

std::uint32_t cp_at(std::string_view s, std::size_t i) { return utf8_next(s, i).cp; }

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

int AddedTokenMatcher::longest_at(std::string_view text, std::size_t pos) const {
  if (!first_byte_[static_cast<unsigned char>(text[pos])]) return -1;
  for (std::size_t k = 0; k < tokens_.size(); ++k) {
    if (text.substr(pos, tokens_[k].content.size()) == tokens_[k].content)
      return static_cast<int>(k);
  }
  return -1;
}

std::vector<AddedTokenMatcher::Segment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Segment> out;
  std::size_t done = 0;  // text[0, done) is in `out`
  for (std::size_t pos = 0; !tokens_.empty() && pos < text.size();) {
    const int k = longest_at(text, pos);
    if (k < 0) {
      ++pos;
      continue;
    }
    const AddedToken& t = tokens_[k];
    std::size_t begin = pos, end = pos + t.content.size();
    pos = end;  // the next search starts after this match, even a discarded one
    if (t.single_word) {
      const bool word_before =
          begin > 0 && is_word_char(cp_at(text, char_start_before(text, begin)));
      const bool word_after = end < text.size() && is_word_char(cp_at(text, end));
      if (word_before || word_after) continue;
    }
    if (t.lstrip) {
      while (begin > done) {
        const std::size_t prev = char_start_before(text, begin);
        if (!is_whitespace(cp_at(text, prev))) break;
        begin = prev;
      }
    }
    if (t.rstrip) {
      while (end < text.size() && is_whitespace(cp_at(text, end))) end += utf8_next(text, end).len;
      pos = std::max(pos, end);
    }
    if (done < begin) out.push_back({done, begin, std::nullopt});
    out.push_back({begin, end, t.id});
    done = end;
  }
  if (done < text.size()) out.push_back({done, text.size(), std::nullopt});
  return out;
}

}  // namespace forge::text
