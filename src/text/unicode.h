// Unicode data the tokenizer.json components need beyond the GPT-2 classes:
// normalization forms, lower-casing and a few character properties, with
// Rust's meanings (Hugging Face tokenizers is written in Rust).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace forge::text {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in normal form `form`.
std::string normalize(std::string_view text, NormalForm form);
// Each character's full lower-case mapping (Rust's char::to_lowercase: no
// context-dependent rules such as the final sigma).
std::string lowercase(std::string_view text);

bool is_whitespace(std::uint32_t cp);   // White_Space (Rust char::is_whitespace)
bool is_punctuation(std::uint32_t cp);  // ASCII punctuation or general category P*
bool is_word_char(std::uint32_t cp);    // \w: alphabetic, mark, decimal number, connector
bool is_numeric(std::uint32_t cp);      // general category N*: Nd, Nl, No (Rust char::is_numeric)

}  // namespace forge::text
