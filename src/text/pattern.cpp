#include "text/pattern.h"

#include <algorithm>
#include <utility>

namespace forge::text {

Pattern Pattern::literal(std::string s) {
  Pattern p;
  if (s.empty()) {
    p.regex_ = compile_regex("");  // matches between every two characters
  } else {
    p.literal_ = std::move(s);
  }
  return p;
}

Pattern Pattern::regex(std::string_view re) {
  Pattern p;
  p.regex_ = compile_regex(re);
  return p;
}

std::vector<Span> Pattern::find_all(std::string_view text) const {
  if (regex_) return text::find_all(*regex_, text);
  std::vector<Span> out;
  for (std::size_t at = text.find(literal_); at != std::string_view::npos;
       at = text.find(literal_, at + literal_.size())) {
    out.push_back({at, at + literal_.size()});
  }
  return out;
}

std::string Pattern::replace_all(std::string_view text, std::string_view with) const {
  std::string out;
  std::size_t pos = 0;
  for (const Span& m : find_all(text)) {
    out.append(text.substr(pos, m.begin - pos)).append(with);
    pos = m.end;
  }
  out.append(text.substr(pos));
  return out;
}

std::vector<Mark> marks_from_matches(const std::vector<Span>& matches, std::size_t size) {
  std::vector<Mark> out;
  std::size_t prev = 0;
  for (const Span& m : matches) {
    if (prev != m.begin) out.push_back({prev, m.begin, false});
    out.push_back({m.begin, m.end, true});
    prev = m.end;
  }
  if (prev != size) out.push_back({prev, size, false});
  return out;
}

std::vector<Span> apply_behavior(std::vector<Mark> marks, SplitBehavior behavior) {
  std::vector<Mark> kept;
  kept.reserve(marks.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      kept = std::move(marks);
      break;
    case SplitBehavior::kRemoved:
      for (const Mark& m : marks) {
        if (!m.match) kept.push_back(m);
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      // A match joins the piece before it, unless that piece is a match too.
      for (const Mark& m : marks) {
        if (m.match && !previous_match && !kept.empty()) {
          kept.back().end = m.end;
        } else {
          kept.push_back(m);
        }
        previous_match = m.match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      // Mirror image: walk from the end, a match joins the piece after it.
      for (auto it = marks.rbegin(); it != marks.rend(); ++it) {
        if (it->match && !previous_match && !kept.empty()) {
          kept.back().begin = it->begin;
        } else {
          kept.push_back(*it);
        }
        previous_match = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case SplitBehavior::kContiguous:
      // Neighbours of the same kind (two matches, two gaps) join.
      for (const Mark& m : marks) {
        if (m.match == previous_match && !kept.empty()) {
          kept.back().end = m.end;
        } else {
          kept.push_back(m);
        }
        previous_match = m.match;
      }
      break;
  }
  std::vector<Span> out;
  out.reserve(kept.size());
  for (const Mark& m : kept) {
    if (m.end > m.begin) out.push_back({m.begin, m.end});
  }
  return out;
}

}  // namespace forge::text
