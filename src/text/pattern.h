// A tokenizer.json pattern ({"String": s} or {"Regex": r}) and the ways a
// Split pre-tokenizer turns its matches into pieces.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/regex.h"

namespace forge::text {

class Pattern {
 public:
  static Pattern literal(std::string s);
  static Pattern regex(std::string_view re);  // ValueError for a bad pattern
  // Non-overlapping matches, leftmost first.
  std::vector<Span> find_all(std::string_view text) const;
  // `text` with every match replaced by `with`.
  std::string replace_all(std::string_view text, std::string_view with) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // null: literal_
};

// A stretch of text and whether the pattern matched it.
struct Mark {
  std::size_t begin, end;
  bool match;
};
// Marks covering all of text[0, size): the matches and the gaps between them.
std::vector<Mark> marks_from_matches(const std::vector<Span>& matches, std::size_t size);

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// The pieces `marks` become under `behavior` (Hugging Face's SplitDelimiterBehavior);
// empty pieces are dropped.
std::vector<Span> apply_behavior(std::vector<Mark> marks, SplitBehavior behavior);

}  // namespace forge::text
