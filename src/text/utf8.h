// UTF-8 helpers for the tokenizer: lenient decoding of input text, lossy
// conversion of decoded bytes (U+FFFD per maximal invalid subpart, as the
// Unicode standard recommends and Hugging Face's decoders do), and the length
// of the prefix that ends on a character boundary (for streaming output).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace forge::text {

// One step of decoding: the code point at s[i] and how many bytes it spans.
// An invalid or truncated sequence decodes as kInvalid spanning the bytes of
// its maximal subpart (at least 1).
struct Utf8Step {
  std::uint32_t cp;
  std::size_t len;
};
inline constexpr std::uint32_t kInvalidCodePoint = 0xFFFFFFFF;

Utf8Step utf8_next(std::string_view s, std::size_t i);

// Appends the UTF-8 encoding of `cp` (<= U+10FFFF) to `out`.
void utf8_append(std::string& out, std::uint32_t cp);

// Byte offset of the first invalid or truncated sequence, or npos if `s` is valid.
std::size_t utf8_first_invalid(std::string_view s);

// `bytes` with each maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// Length of the longest prefix of `bytes` that does not end inside a sequence
// which could still be completed by more bytes. Invalid bytes count as complete
// (they will be replaced, more bytes cannot fix them).
std::size_t utf8_complete_prefix(std::string_view bytes);

}  // namespace forge::text
