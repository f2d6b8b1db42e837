// Unicode character classes used by pre-tokenization: the three classes the
// GPT-2 split pattern distinguishes (\p{L}, \p{N}, \s) and everything else.
// The run table is generated (scripts/gen_unicode_tables.py); char_class()
// looks a code point up in it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace forge::text {

enum class CharClass : std::uint8_t { kOther, kLetter, kNumber, kSpace };

// Code points from `start` up to the next run's start have class `cls`.
struct ClassRun {
  std::uint32_t start;
  CharClass cls;
};

extern const char* const kUnicodeVersion;
extern const std::size_t kClassRunCount;
extern const ClassRun kClassRuns[];  // sorted by start, kClassRuns[0].start == 0

// Class of a code point; values above U+10FFFF are kOther.
CharClass char_class(std::uint32_t cp);

}  // namespace forge::text
