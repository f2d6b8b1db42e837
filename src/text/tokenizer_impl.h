// The state behind forge::Tokenizer, built once from a TokenizerSpec.
#pragma once
#include <optional>
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

  // Appends the ids of `text`; added tokens are matched first when `match_added`.
  void encode(std::string_view text, bool match_added, std::vector<std::uint32_t>& out) const;
  // Raw bytes of `id`; ValueError if it is out of range or has no token.
  const std::string& bytes_of(std::uint32_t id) const;

  text::BpeModel model;
  text::AddedTokenMatcher matcher;
  text::PreTokenizer pre;
  std::vector<std::string> bytes;  // [vocab_size] what each id decodes to
  std::vector<bool> present;       // [vocab_size] id has a token
  std::vector<bool> special;       // [vocab_size] id is a special added token
  text::StringMap<std::uint32_t> added_ids;  // added-token content -> id
  std::optional<std::uint32_t> bos, eos;
};

}  // namespace forge
