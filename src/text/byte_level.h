// GPT-2's byte-level alphabet: each of the 256 byte values is shown as one
// printable code point (printable Latin-1 bytes as themselves, the others as
// U+0100 onwards), so vocab and merges files can spell arbitrary bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace forge::text {

// Code point that stands for byte `b`.
std::uint32_t byte_to_char(std::uint8_t b);

// Byte that code point `cp` stands for, or nullopt if it is not in the alphabet.
std::optional<std::uint8_t> char_to_byte(std::uint32_t cp);

// The raw bytes that a vocab string spells, or nullopt if it contains a
// character outside the alphabet (or is not valid UTF-8).
std::optional<std::string> byte_level_to_bytes(std::string_view token);

// The vocab spelling of raw bytes.
std::string bytes_to_byte_level(std::string_view bytes);

}  // namespace forge::text
