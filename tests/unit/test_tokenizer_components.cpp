// tokenizer.json components one by one, including settings the fixture
// tokenizers do not use. Expected values follow Hugging Face tokenizers'
// documented semantics (the examples in its docs and its own unit tests).
#include <gtest/gtest.h>

#include "forge/error.h"
#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/pattern.h"
#include "text/pretokenizer.h"
#include "text/regex.h"

namespace {

using namespace forge::text;
using V = std::vector<std::string>;
using K = PreTokenizeStep::Kind;

V pieces(std::string_view text, std::vector<PreTokenizeStep> steps, bool at_start = true) {
  V out;
  PreTokenizer(std::move(steps)).split(text, at_start, [&](std::string_view p) {
    out.emplace_back(p);
  });
  return out;
}

PreTokenizeStep split_step(Pattern p, SplitBehavior b, bool invert = false) {
  PreTokenizeStep s = PreTokenizeStep::of(K::kSplit);
  s.pattern = std::move(p);
  s.behavior = b;
  s.invert = invert;
  return s;
}

std::string norm(std::string_view text, std::vector<NormalizerStep> steps) {
  return Normalizer(std::move(steps)).apply(text);
}

std::string dec(V tokens, std::vector<DecoderStep> steps) {
  return Decoder(std::move(steps)).decode(std::move(tokens));
}

const std::string kMeta = "\xE2\x96\x81";  // U+2581

}  // namespace

// The example of SplitDelimiterBehavior's documentation: "the-final--countdown" split on "-".
TEST(TokenizerComponents, SplitBehaviors) {
  const std::string text = "the-final--countdown";
  auto run = [&](SplitBehavior b) { return pieces(text, {split_step(Pattern::literal("-"), b)}); };
  EXPECT_EQ(run(SplitBehavior::kRemoved), (V{"the", "final", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::kIsolated), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::kMergedWithPrevious), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(run(SplitBehavior::kMergedWithNext), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(run(SplitBehavior::kContiguous), (V{"the", "-", "final", "--", "countdown"}));
}

TEST(TokenizerComponents, SplitRegexAndInvert) {
  const Pattern digits = Pattern::regex("\\d+");
  EXPECT_EQ(pieces("ab12cd345", {split_step(digits, SplitBehavior::kIsolated)}),
            (V{"ab", "12", "cd", "345"}));
  // Inverted, the text between matches is what gets removed / merged.
  EXPECT_EQ(pieces("ab12cd345", {split_step(digits, SplitBehavior::kRemoved, true)}),
            (V{"12", "345"}));
  EXPECT_EQ(pieces("ab12cd345", {split_step(digits, SplitBehavior::kMergedWithNext, true)}),
            (V{"ab12", "cd345"}));
  // Unicode properties, lookahead and inline flags (Oniguruma).
  EXPECT_EQ(pieces("Don'T stop", {split_step(Pattern::regex("(?i:'t)|\\p{L}+|\\s+(?!\\S)|\\s+"),
                                             SplitBehavior::kIsolated)}),
            (V{"Don", "'T", " ", "stop"}));
}

TEST(TokenizerComponents, RegexFindAllSkipsEmptyMatchAfterAMatch) {
  const auto re = compile_regex("a*");
  const auto m = find_all(*re, "baa");
  // "" at 0, "aa" at 1; the "" at 3 touches the previous match, and the
  // skip past it reaches the end.
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].begin, 0u);
  EXPECT_EQ(m[0].end, 0u);
  EXPECT_EQ(m[1].begin, 1u);
  EXPECT_EQ(m[1].end, 3u);
  EXPECT_THROW(compile_regex("(unclosed"), forge::ValueError);
}

TEST(TokenizerComponents, Digits) {
  PreTokenizeStep d = PreTokenizeStep::of(K::kDigits);
  d.individual_digits = true;
  EXPECT_EQ(pieces("Call 123 please", {d}), (V{"Call ", "1", "2", "3", " please"}));
  d.individual_digits = false;
  EXPECT_EQ(pieces("Call 123 please", {d}), (V{"Call ", "123", " please"}));
  // Every number character counts, as Rust's char::is_numeric has it (what
  // tokenizers' Digits asks): fullwidth digits (Nd), Roman numerals (Nl),
  // fractions and circled numbers (No); letters that look numeric do not.
  // "x ７８ Ⅻ½ ① ℌ"
  const std::string text = "x \xEF\xBC\x97\xEF\xBC\x98 \xE2\x85\xAB\xC2\xBD \xE2\x91\xA0 \xE2\x84\x8C";
  EXPECT_EQ(pieces(text, {d}), (V{"x ", "\xEF\xBC\x97\xEF\xBC\x98", " ", "\xE2\x85\xAB\xC2\xBD", " ", "\xE2\x91\xA0",
                                  " \xE2\x84\x8C"}));
  d.individual_digits = true;
  EXPECT_EQ(pieces(text, {d}), (V{"x ", "\xEF\xBC\x97", "\xEF\xBC\x98", " ", "\xE2\x85\xAB", "\xC2\xBD", " ",
                                  "\xE2\x91\xA0", " \xE2\x84\x8C"}));
}

TEST(TokenizerComponents, WhitespaceAndWhitespaceSplit) {
  const std::string text = "Hey friend!     How are you?!?";
  EXPECT_EQ(pieces(text, {PreTokenizeStep::of(K::kWhitespace)}),
            (V{"Hey", "friend", "!", "How", "are", "you", "?!?"}));
  EXPECT_EQ(pieces(text, {PreTokenizeStep::of(K::kWhitespaceSplit)}),
            (V{"Hey", "friend!", "How", "are", "you?!?"}));
  EXPECT_EQ(pieces("caf\xC3\xA9\xE3\x80\x80ok", {PreTokenizeStep::of(K::kWhitespaceSplit)}),
            (V{"caf\xC3\xA9", "ok"}));  // U+3000 is whitespace
}

TEST(TokenizerComponents, Punctuation) {
  PreTokenizeStep p = PreTokenizeStep::of(K::kPunctuation);
  EXPECT_EQ(pieces("Hey friend!     How are you?!?", {p}),
            (V{"Hey friend", "!", "     How are you", "?", "!", "?"}));
  p.behavior = SplitBehavior::kContiguous;
  EXPECT_EQ(pieces("you?!? \xC2\xBF"
                   "a$",
                   {p}),
            (V{"you", "?!?", " ", "\xC2\xBF", "a", "$"}));
}

TEST(TokenizerComponents, MetaspacePrependSchemes) {
  PreTokenizeStep m = PreTokenizeStep::of(K::kMetaspace);
  EXPECT_EQ(pieces("Hey friend!", {m}), (V{kMeta + "Hey", kMeta + "friend!"}));
  EXPECT_EQ(pieces("Hey   friend!", {m}), (V{kMeta + "Hey", kMeta, kMeta, kMeta + "friend!"}));
  m.prepend_scheme = PrependScheme::kNever;
  EXPECT_EQ(pieces("Hey friend!", {m}), (V{"Hey", kMeta + "friend!"}));
  m.prepend_scheme = PrependScheme::kFirst;
  EXPECT_EQ(pieces("Hey friend!", {m}, true), (V{kMeta + "Hey", kMeta + "friend!"}));
  EXPECT_EQ(pieces("Hey friend!", {m}, false), (V{"Hey", kMeta + "friend!"}));
  m.split = false;
  EXPECT_EQ(pieces("Hey friend!", {m}), (V{kMeta + "Hey" + kMeta + "friend!"}));
}

TEST(TokenizerComponents, ByteLevelPrefixSpaceAndAlphabet) {
  PreTokenizeStep b = PreTokenizeStep::of(K::kByteLevel);
  b.add_prefix_space = true;
  EXPECT_EQ(pieces("hi there", {b}), (V{"\xC4\xA0hi", "\xC4\xA0there"}));  // Ġhi Ġthere
  b.use_regex = false;
  EXPECT_EQ(pieces("hi there", {b}), (V{"\xC4\xA0hi\xC4\xA0there"}));
}

TEST(TokenizerComponents, Normalizers) {
  EXPECT_EQ(norm("\xEF\xAC\x81"
                 "ve \xE2\x91\xA0",
                 {NormalizeForm{NormalForm::kNfkc}}),
            "five 1");  // ﬁ ①
  EXPECT_EQ(norm("\xC3\xA9", {NormalizeForm{NormalForm::kNfd}}), "e\xCC\x81");
  EXPECT_EQ(norm("e\xCC\x81", {NormalizeForm{NormalForm::kNfc}}), "\xC3\xA9");
  EXPECT_EQ(norm("\xEF\xAC\x81", {NormalizeForm{NormalForm::kNfc}}),
            "\xEF\xAC\x81");  // NFC keeps ﬁ
  // Per character, as Rust's char::to_lowercase: final sigma stays σ.
  EXPECT_EQ(norm("HeLLo \xC3\x80\xCE\xA3", {Lowercase{}}), "hello \xC3\xA0\xCF\x83");
  EXPECT_EQ(norm(" \t hi \xE3\x80\x80", {Strip{true, true}}), "hi");
  EXPECT_EQ(norm("  hi  ", {Strip{true, false}}), "hi  ");
  EXPECT_EQ(norm("  hi  ", {Strip{false, true}}), "  hi");
  EXPECT_EQ(norm("a b  c", {Prepend{kMeta}, Replace{Pattern::literal(" "), kMeta}}),
            kMeta + "a" + kMeta + "b" + kMeta + kMeta + "c");
  EXPECT_EQ(norm("", {Prepend{kMeta}}), "");  // nothing to prepend to
  EXPECT_EQ(norm("a1b22", {Replace{Pattern::regex("\\d+"), "#"}}), "a#b#");
}

TEST(TokenizerComponents, Decoders) {
  EXPECT_EQ(dec({kMeta + "Hey", kMeta + "friend!"}, {MetaspaceDecode{}}), "Hey friend!");
  EXPECT_EQ(
      dec({kMeta + "Hey", kMeta + "friend!"}, {MetaspaceDecode{kMeta, PrependScheme::kNever}}),
      " Hey friend!");
  // ByteFallback: a run of byte tokens is one UTF-8 string, or U+FFFD per byte if invalid.
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(dec({"<0xE2>", "<0x82>", "<0xAC>", "x"}, {ByteFallbackDecode{}}),
            "\xE2\x82\xAC"
            "x");
  EXPECT_EQ(dec({"<0xE2>", "<0x82>", "x", "<0x41>"}, {ByteFallbackDecode{}}), fffd + fffd + "xA");
  // Strip cuts at most `start` copies from each token's front (per token before Fuse).
  EXPECT_EQ(dec({"  a", " b"}, {StripDecode{" ", 1, 0}}), " ab");
  EXPECT_EQ(dec({"  a", " b"}, {FuseDecode{}, StripDecode{" ", 1, 0}}), " a b");
  EXPECT_EQ(dec({"xa", "bx"}, {StripDecode{"x", 0, 1}}), "xab");
  EXPECT_EQ(
      dec({kMeta + "a", kMeta + "b"}, {ReplaceDecode{Pattern::literal(kMeta), " "},
                                       ByteFallbackDecode{}, FuseDecode{}, StripDecode{" ", 1, 0}}),
      "a b");
  EXPECT_EQ(dec({"\xC4\xA0hi", "!"}, {ByteLevelDecode{}}), " hi!");
  EXPECT_EQ(Decoder().decode({"a", "b"}), "a b");  // no decoder: joined by spaces
}
