// Added tokens (tokenizer.json's added_tokens, e.g. "<|endoftext|>"): found in
// the text before pre-tokenization and encoded as their single id.
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
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  struct Match {
    std::size_t begin, end;  // text[begin, end) is replaced by `id` (stripped whitespace included)
    std::uint32_t id;
  };
  // The leftmost match (longest among those starting there) in text[from..].
  std::optional<Match> find(std::string_view text, std::size_t from) const;

 private:
  std::optional<Match> match_at(std::string_view text, std::size_t from, std::size_t pos) const;
  std::vector<AddedToken> tokens_;           // longest content first
  std::array<bool, 256> first_byte_{};       // some token starts with this byte
};

}  // namespace forge::text
