// find_all over any Regex engine (Oniguruma natively, the page's RegExp in
// the browser build).
#include "text/regex.h"
#include "text/utf8.h"

namespace forge::text {

std::vector<Span> find_all(const Regex& re, std::string_view text) {
  std::vector<Span> out;
  std::size_t from = 0;
  std::optional<std::size_t> last_end;
  while (from <= text.size()) {
    const auto m = re.find(text, from);
    if (!m) break;
    if (m->begin == m->end && last_end == m->end) {
      if (from >= text.size()) break;
      from += utf8_next(text, from).len;
      continue;
    }
    out.push_back(*m);
    from = m->end;
    last_end = m->end;
  }
  return out;
}

}  // namespace forge::text
