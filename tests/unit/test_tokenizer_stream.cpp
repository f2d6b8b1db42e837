// Streaming decode and the UTF-8 rules behind it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/tokenizer.h"
#include "text/utf8.h"
#include "unit/this_build.h"

namespace {

const forge::Tokenizer& gpt2() {
  static const forge::Tokenizer tok =
      forge::Tokenizer::from_file(std::string(forge::testing::test_data_dir()) + "/tokenizer-gpt2/tokenizer.json");
  return tok;
}

const std::string kFffd = "\xEF\xBF\xBD";

}  // namespace

TEST(TokenizerUtf8, LossyReplacesMaximalSubparts) {
  using forge::text::utf8_lossy;
  EXPECT_EQ(utf8_lossy("plain \xC3\xA9"), "plain \xC3\xA9");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\xA4"), kFffd);                // truncated 4-byte
  EXPECT_EQ(utf8_lossy("\xC0\x80"), kFffd + kFffd);            // overlong lead
  EXPECT_EQ(utf8_lossy("a\xED\xA0\x80" "b"), "a" + kFffd + kFffd + kFffd + "b");  // surrogate
  EXPECT_EQ(utf8_lossy("x\xF4\x90\x80\x80y"), "x" + kFffd + kFffd + kFffd + kFffd + "y");
}

TEST(TokenizerUtf8, CompletePrefixHoldsBackOnlyCompletableTails) {
  using forge::text::utf8_complete_prefix;
  EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\xA4"), 1u);      // 🤗 missing its last byte
  EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\xA4\x97"), 5u);  // complete
  EXPECT_EQ(utf8_complete_prefix("a\xE2"), 1u);
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);              // invalid: nothing to wait for
  EXPECT_EQ(utf8_complete_prefix("a\xE0\x80"), 3u);          // E0 80 can never complete
}

TEST(TokenizerStream, HoldsBackEmojiSplitAcrossTokens) {
  const std::string hug = "\xF0\x9F\xA4\x97";  // 🤗
  const auto ids = gpt2().encode(hug);
  ASSERT_GE(ids.size(), 2u) << "the emoji should span several byte tokens";
  forge::StreamDecoder dec(gpt2());
  std::string out;
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
    EXPECT_EQ(dec.push(ids[i]), "") << "token " << i << " emitted half a character";
  }
  EXPECT_EQ(dec.push(ids.back()), hug);
  EXPECT_EQ(dec.flush(), "");
}

TEST(TokenizerStream, ConcatenationEqualsFullDecode) {
  std::ifstream in(std::string(forge::testing::test_data_dir()) + "/tokenizer-gpt2/cases.json");
  const auto cases = nlohmann::json::parse(in);
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const auto ids = c["ids"].get<std::vector<std::uint32_t>>();
    forge::StreamDecoder dec(gpt2());
    std::string out;
    for (auto id : ids) {
      const std::string piece = dec.push(id);
      EXPECT_EQ(forge::text::utf8_lossy(piece), piece) << "push emitted invalid UTF-8";
      out += piece;
    }
    out += dec.flush();
    EXPECT_EQ(out, gpt2().decode(ids)) << c["text"].get<std::string>();
  }
}

TEST(TokenizerStream, InvalidBytesBecomeReplacementCharacter) {
  const auto lead = gpt2().token_id("\xC3\xB0");  // "ð" spells byte 0xF0, a 4-byte lead
  const auto bad = gpt2().token_id("\xC3\xBF");   // "ÿ" spells byte 0xFF, never valid
  ASSERT_TRUE(lead && bad);
  forge::StreamDecoder dec(gpt2());
  EXPECT_EQ(dec.push(*lead), "");
  EXPECT_EQ(dec.flush(), kFffd);
  EXPECT_EQ(dec.push(*bad), kFffd);
  std::vector<std::uint32_t> ids = gpt2().encode("ok");
  ids.push_back(*lead);
  EXPECT_EQ(gpt2().decode(ids), "ok" + kFffd);
}

// ByteFallback decodes a run of "<0xXX>" tokens whole: a run that is not valid
// UTF-8 is one U+FFFD per byte, its valid bytes ("}" below) included, and the
// stream must keep that run as context across pushes.
TEST(TokenizerStream, InvalidByteFallbackRunStaysReplacedAcrossPushes) {
  const auto tok = forge::Tokenizer::from_file(std::string(forge::testing::test_data_dir()) +
                                               "/tokenizer-spm/tokenizer.json");
  auto id = [&](const char* t) {
    const auto i = tok.token_id(t);
    EXPECT_TRUE(i) << t;
    return i.value_or(0);
  };
  const std::vector<std::vector<std::uint32_t>> cases = {
      {id("\xE2\x96\x81the"), id("<0xAB>"), id("<0xCD>"), id("<0x7D>"), id("<0x7E>"), id("\xE2\x96\x81the")},
      {id("<0xAB>"), id("<0xE6>"), id("<0x97>"), id("<0xA5>"), id("<0x41>")},  // bad byte, then 日
      {id("<0xE6>"), id("<0x97>"), id("<0xA5>"), id("<0x41>"), id("\xE2\x96\x81the")},  // 日A: valid
  };
  const std::vector<std::string> want = {
      "the" + kFffd + kFffd + kFffd + kFffd + " the",
      kFffd + kFffd + kFffd + kFffd + kFffd,
      "\xE6\x97\xA5" "A the",
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    ASSERT_EQ(tok.decode(cases[c]), want[c]) << "case " << c << ": the full decode itself";
    forge::StreamDecoder dec(tok);
    std::string out;
    for (auto i : cases[c]) out += dec.push(i);
    out += dec.flush();
    EXPECT_EQ(out, want[c]) << "case " << c;
  }
}

// A run of whole characters, already emitted, then a byte that makes the run
// invalid: the full decode rewrites the run as U+FFFD per byte, which a
// stream cannot take back. It keeps what it emitted, goes on (no error
// mid-generation), and says it is no longer exact.
TEST(TokenizerStream, RewrittenByteFallbackRunGoesOnAndSaysSo) {
  const auto tok = forge::Tokenizer::from_file(std::string(forge::testing::test_data_dir()) +
                                               "/tokenizer-spm/tokenizer.json");
  auto id = [&](const char* t) { return tok.token_id(t).value_or(0); };
  const std::vector<std::uint32_t> ids = {id("<0xE6>"), id("<0x97>"), id("<0xA5>"), id("<0x80>"),
                                          id("\xE2\x96\x81the")};
  ASSERT_EQ(tok.decode(ids), kFffd + kFffd + kFffd + kFffd + " the");
  forge::StreamDecoder dec(tok);
  std::vector<std::string> pieces;
  for (auto i : ids) pieces.push_back(dec.push(i));
  EXPECT_EQ(pieces, (std::vector<std::string>{"", "", "\xE6\x97\xA5", kFffd, " the"}));
  EXPECT_EQ(dec.flush(), "");
  EXPECT_FALSE(dec.exact());
  // A held-back byte after such a run is flushed, not dropped.
  forge::StreamDecoder held(tok);
  std::string out;
  for (auto i : {id("<0xE6>"), id("<0x97>"), id("<0xA5>"), id("<0xE6>")}) out += held.push(i);
  EXPECT_EQ(out, "\xE6\x97\xA5");
  EXPECT_EQ(held.flush(), kFffd);
  EXPECT_FALSE(held.exact());
  // The ordinary case stays exact.
  forge::StreamDecoder plain(tok);
  std::string plain_out;
  for (auto i : {id("<0xE6>"), id("<0x97>"), id("<0xA5>"), id("\xE2\x96\x81the")}) plain_out += plain.push(i);
  plain_out += plain.flush();
  EXPECT_EQ(plain_out, "\xE6\x97\xA5 the");
  EXPECT_TRUE(plain.exact());
}
