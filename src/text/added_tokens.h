// Added tokens (tokenizer.json's added_tokens, e.g. "<|endoftext|>"): found in
// the text before pre-tokenization and encoded as their single id. As in
// Hugging Face tokenizers, tokens with `normalized` false are matched in the
// raw text, the others in the normalized text (their content normalized too);
// matches are leftmost-longest and do not overlap.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::text {

struct AddedToken {
  std::string content;
  std::uint32_t id = 0;
  bool special = false;      // skipped by decode(skip_special)
  bool lstrip = false;       // swallows whitespace on its left
  bool rstrip = false;       // swallows whitespace on its right
  bool single_word = false;  // only matches when not inside a word
  bool normalized = false;   // matched after normalization
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  struct Segment {
    std::size_t begin, end;         // text[begin, end)
    std::optional<std::uint32_t> id;  // set: the segment (stripped whitespace included) is this token
  };
  // `text` cut into plain segments and added-token matches, in order.
  std::vector<Segment> split(std::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  // Index into tokens_ of the longest token at text[pos], or -1.
  int longest_at(std::string_view text, std::size_t pos) const;
  std::vector<AddedToken> tokens_;           // longest content first
  std::array<bool, 256> first_byte_{};       // some token starts with this byte
};

}  // namespace forge::text
