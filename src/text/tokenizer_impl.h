// The state behind forge::Tokenizer, built once from a TokenizerSpec.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "forge/tokenizer.h"
#include "text/added_tokens.h"
#include "text/bpe_model.h"
#include "text/pretokenizer.h"
#include "text/tokenizer_spec.h"

namespace forge {

struct Tokenizer::Impl {
  explicit Impl(text::TokenizerSpec spec);

  // The ids of `text` (valid UTF-8, else ValueError naming the byte offset);
  // added tokens are matched first when `match_added`, the post-processor's
  // special tokens added when `add_special`.
  std::vector<std::uint32_t> encode(std::string_view text, bool match_added, bool add_special) const;
  // Text of `ids` through the decoder.
  std::string decode(std::span<const std::uint32_t> ids, bool skip_special) const;
  // Raw bytes of `id` in the middle of a text; ValueError if it is out of range or has no token.
  const std::string& bytes_of(std::uint32_t id) const;
  void check(std::uint32_t id) const;

  text::BpeModel model;
  text::AddedTokenMatcher raw_matcher;   // added tokens with normalized false
  text::AddedTokenMatcher norm_matcher;  // the others, their content normalized
  text::Normalizer normalizer;
  text::PreTokenizer pre;
  std::vector<text::Template> post;
  text::Decoder decoder;
  std::vector<std::string> tokens;  // [vocab_size] token string of each id
  std::vector<std::string> bytes;   // [vocab_size] what each id contributes (decoder.token_bytes)
  std::vector<bool> present;        // [vocab_size] id has a token
  std::vector<bool> special;       // [vocab_size] id is a special added token
  std::vector<bool> fallback_byte;  // [vocab_size] id is a "<0xXX>" byte of a ByteFallback run
  text::StringMap<std::uint32_t> added_ids;  // added-token content -> id
  std::optional<std::uint32_t> bos, eos;
};

}  // namespace forge
