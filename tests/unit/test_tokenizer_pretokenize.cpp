// GPT-2's split pattern, written by hand, on the cases where regex semantics are subtle.
#include <gtest/gtest.h>

#include "text/pretokenizer.h"
#include "text/unicode_tables.h"

namespace {

using forge::text::PreTokenizer;
using forge::text::PreTokenizeStep;

using K = PreTokenizeStep::Kind;

std::vector<std::string> split(std::string_view text,
                               std::vector<PreTokenizeStep> steps = {PreTokenizeStep::of(K::kGpt2Split)}) {
  std::vector<std::string> out;
  PreTokenizer(std::move(steps)).split(text, true, [&](std::string_view p) { out.emplace_back(p); });
  return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST(TokenizerPreTokenize, WordsNumbersAndPunctuation) {
  EXPECT_EQ(split("Hello, world!"), (V{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("pi 3.14159 x2"), (V{"pi", " 3", ".", "14159", " x", "2"}));
  EXPECT_EQ(split(" ?!"), (V{" ?!"}));
  EXPECT_EQ(split(""), V{});
}

TEST(TokenizerPreTokenize, Contractions) {
  EXPECT_EQ(split("don't we'll I'M"), (V{"don", "'t", " we", "'ll", " I", "'", "M"}));
  EXPECT_EQ(split("'s's"), (V{"'s", "'s"}));
  EXPECT_EQ(split("x 're"), (V{"x", " '", "re"}));  // ' ?' takes the space, then "'re" is not at the start
}

TEST(TokenizerPreTokenize, WhitespaceRunsLeaveTheLastSpaceToTheNextWord) {
  EXPECT_EQ(split("a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(split("a \n\nb"), (V{"a", " \n", "\n", "b"}));
  EXPECT_EQ(split("end   "), (V{"end", "   "}));
  EXPECT_EQ(split("  "), (V{"  "}));
  EXPECT_EQ(split("x\ty"), (V{"x", "\t", "y"}));
}

TEST(TokenizerPreTokenize, UnicodeClasses) {
  // U+00A0 no-break space is \s; U+200B zero-width space is not (it is Cf).
  EXPECT_EQ(split("a\xC2\xA0" "b"), (V{"a", "\xC2\xA0", "b"}));
  EXPECT_EQ(split("a\xE2\x80\x8B" "b"), (V{"a", "\xE2\x80\x8B", "b"}));
  // Letters beyond ASCII, and a number class that is not a digit (U+00BD ½ is No).
  EXPECT_EQ(split("caf\xC3\xA9 \xC2\xBD"), (V{"caf\xC3\xA9", " \xC2\xBD"}));
  EXPECT_EQ(forge::text::char_class(0x4E2D), forge::text::CharClass::kLetter);  // 中
  EXPECT_EQ(forge::text::char_class(0x0663), forge::text::CharClass::kNumber);  // Arabic-Indic 3
  EXPECT_EQ(forge::text::char_class(0x3000), forge::text::CharClass::kSpace);   // ideographic space
  EXPECT_EQ(forge::text::char_class(0x1F917), forge::text::CharClass::kOther);  // 🤗
}

TEST(TokenizerPreTokenize, InvalidUtf8IsPunctuationLike) {
  EXPECT_EQ(split("a\xFF\xFE b"), (V{"a", "\xFF\xFE", " b"}));
}

TEST(TokenizerPreTokenize, DigitsThenGpt2Split) {
  PreTokenizeStep digits = PreTokenizeStep::of(K::kDigits);
  digits.individual_digits = true;
  const PreTokenizeStep gpt2 = PreTokenizeStep::of(K::kGpt2Split);
  EXPECT_EQ(split("ab 2026!", {digits, gpt2}), (V{"ab", " ", "2", "0", "2", "6", "!"}));
  digits.individual_digits = false;
  EXPECT_EQ(split("ab 2026!", {digits, gpt2}), (V{"ab", " ", "2026", "!"}));
}
