#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace forge::text {

namespace {

bool printable(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Alphabet {
  std::array<std::uint32_t, 256> to_char{};
  std::array<std::int16_t, 0x144> to_byte{};  // indexed by code point; -1 = not in alphabet
  Alphabet() {
    to_byte.fill(-1);
    std::uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = printable(b) ? static_cast<std::uint32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<std::int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::uint32_t byte_to_char(std::uint8_t b) { return alphabet().to_char[b]; }

std::optional<std::uint8_t> char_to_byte(std::uint32_t cp) {
  const auto& t = alphabet().to_byte;
  if (cp >= t.size() || t[cp] < 0) return std::nullopt;
  return static_cast<std::uint8_t>(t[cp]);
}

std::optional<std::string> byte_level_to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (std::size_t i = 0; i < token.size();) {
    const Utf8Step step = utf8_next(token, i);
    const auto b = char_to_byte(step.cp);
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
    i += step.len;
  }
  return out;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) utf8_append(out, byte_to_char(b));
  return out;
}

}  // namespace forge::text
