// Pre-tokenization: splitting text into the pieces that BPE encodes one by one.
// Supported are the steps byte-level tokenizer.json files combine:
//   kGpt2Split       GPT-2's pattern, written by hand (no regex library, so it
//                    also builds for the browser):
//                    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   kDigits          every ASCII digit is its own piece (Digits, individual_digits)
//   kDigitRuns       runs of ASCII digits are pieces (Digits, not individual)
//   kPrefixSpace     prepend " " unless the piece starts with one (ByteLevel add_prefix_space)
// Steps run in order; each splits every piece the previous step produced.
#pragma once
#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

namespace forge::text {

enum class PreTokenizeStep { kGpt2Split, kDigits, kDigitRuns, kPrefixSpace };

// End (exclusive) of the GPT-2 pattern's match that starts at s[i], i < s.size().
std::size_t gpt2_piece_end(std::string_view s, std::size_t i);

class PreTokenizer {
 public:
  PreTokenizer() = default;
  explicit PreTokenizer(std::vector<PreTokenizeStep> steps) : steps_(std::move(steps)) {}

  // Calls `emit` for every non-empty piece of `text`, in order. A piece may
  // point into a temporary buffer (prefix space): use it before returning.
  void split(std::string_view text, const std::function<void(std::string_view)>& emit) const;

  const std::vector<PreTokenizeStep>& steps() const { return steps_; }

 private:
  void run(std::size_t step, std::string_view piece,
           const std::function<void(std::string_view)>& emit) const;
  std::vector<PreTokenizeStep> steps_;
};

}  // namespace forge::text
