// Pre-tokenization (tokenizer.json "pre_tokenizer"): splitting normalized text
// into the pieces that the model encodes one by one. Steps run in order; each
// splits (and may rewrite) every piece the previous step produced:
//   kSplit           a Pattern with a SplitBehavior, optionally inverted
//   kGpt2Split       GPT-2's pattern, written by hand (faster than the regex
//                    engine, same pieces: tests/unit/test_tokenizer_fixtures.cpp):
//                    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   kByteLevel       optional prefix space, optional GPT-2 split, then bytes to
//                    the byte-level alphabet (text/byte_level.h)
//   kDigits          ASCII digits isolated one by one, or in runs
//   kMetaspace       spaces become the replacement character, which is
//                    prepended (first / always / never) and optionally split on
//   kWhitespace      \w+|[^\w\s]+ runs, whitespace removed
//   kWhitespaceSplit split on whitespace, which is removed
//   kPunctuation     each punctuation character split off per `behavior`
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "text/pattern.h"

namespace forge::text {

enum class PrependScheme { kFirst, kAlways, kNever };

struct PreTokenizeStep {
  enum class Kind {
    kSplit, kGpt2Split, kByteLevel, kDigits, kMetaspace, kWhitespace, kWhitespaceSplit, kPunctuation
  };
  Kind kind = Kind::kGpt2Split;
  Pattern pattern;                                     // kSplit
  SplitBehavior behavior = SplitBehavior::kIsolated;   // kSplit, kPunctuation
  bool invert = false;                                 // kSplit
  bool individual_digits = false;                      // kDigits
  bool add_prefix_space = false, use_regex = true;     // kByteLevel
  std::string replacement = "\xE2\x96\x81";            // kMetaspace: U+2581
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;

  static PreTokenizeStep of(Kind k) {
    PreTokenizeStep s;
    s.kind = k;
    return s;
  }
};

// End (exclusive) of the GPT-2 pattern's match that starts at s[i], i < s.size().
std::size_t gpt2_piece_end(std::string_view s, std::size_t i);

class PreTokenizer {
 public:
  PreTokenizer() = default;
  // `raw_byte_level`: a final ByteLevel step emits raw bytes instead of their
  // byte-level spelling (for BpeModel::encode_piece's raw_bytes path).
  explicit PreTokenizer(std::vector<PreTokenizeStep> steps, bool raw_byte_level = false)
      : steps_(std::move(steps)), raw_byte_level_(raw_byte_level) {}
  // Pieces come out as raw bytes (see raw_byte_level).
  bool emits_raw_bytes() const {
    return raw_byte_level_ && !steps_.empty() && steps_.back().kind == PreTokenizeStep::Kind::kByteLevel;
  }

  // Calls `emit` for every non-empty piece of `text`, in order. `at_start`:
  // `text` begins the input (Metaspace's prepend_scheme "first"). A piece may
  // point into a temporary buffer: use it before returning.
  void split(std::string_view text, bool at_start,
             const std::function<void(std::string_view)>& emit) const;

  const std::vector<PreTokenizeStep>& steps() const { return steps_; }

 private:
  void run(std::size_t step, std::string_view piece, bool at_start,
           const std::function<void(std::string_view)>& emit) const;
  std::vector<PreTokenizeStep> steps_;
  bool raw_byte_level_ = false;
};

}  // namespace forge::text
