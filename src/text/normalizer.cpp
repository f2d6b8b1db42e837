#include "text/normalizer.h"

#include "text/overloaded.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

std::string strip(std::string_view s, const Strip& how) {
  std::size_t begin = 0, end = s.size();
  if (how.left) {
    while (begin < end) {
      const Utf8Step step = utf8_next(s, begin);
      if (!is_whitespace(step.cp)) break;
      begin += step.len;
    }
  }
  if (how.right) {
    while (end > begin) {
      std::size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      if (!is_whitespace(utf8_next(s, start).cp)) break;
      end = start;
    }
  }
  return std::string(s.substr(begin, end - begin));
}

}  // namespace

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& step : steps_) {
    s = std::visit(Overloaded{
                       [&](const NormalizeForm& n) { return normalize(s, n.form); },
                       [&](const Lowercase&) { return lowercase(s); },
                       [&](const Prepend& p) { return s.empty() ? s : p.prefix + s; },
                       [&](const Replace& r) { return r.pattern.replace_all(s, r.content); },
                       [&](const Strip& st) { return strip(s, st); },
                   },
                   step);
  }
  return s;
}

}  // namespace forge::text
