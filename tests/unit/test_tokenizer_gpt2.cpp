// GPT-2's real tokenizer.json against ids made by the Hugging Face tokenizers library.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/error.h"
#include "forge/tokenizer.h"
#include "unit/this_build.h"

namespace {

const std::string kDir = std::string(forge::testing::test_data_dir()) + "/tokenizer-gpt2";

const forge::Tokenizer& gpt2() {
  static const forge::Tokenizer tok = forge::Tokenizer::from_file(kDir + "/tokenizer.json");
  return tok;
}

nlohmann::json cases() {
  std::ifstream in(kDir + "/cases.json");
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(TokenizerGpt2, EncodeMatchesReferenceIds) {
  const auto all = cases();
  ASSERT_EQ(all.size(), 18u);
  for (const auto& c : all) {
    const std::string text = c["text"];
    const auto expected = c["ids"].get<std::vector<std::uint32_t>>();
    EXPECT_EQ(gpt2().encode(text), expected) << "text: " << text;
  }
}

TEST(TokenizerGpt2, DecodeMatchesReferenceText) {
  for (const auto& c : cases()) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<std::uint32_t>>();
    EXPECT_EQ(gpt2().decode(ids), c["decoded"].get<std::string>()) << "text: " << text;
    EXPECT_EQ(gpt2().decode(gpt2().encode(text)), text);
  }
}

TEST(TokenizerGpt2, VocabAndSpecialTokens) {
  EXPECT_EQ(gpt2().vocab_size(), 50257u);
  EXPECT_EQ(gpt2().token_id("<|endoftext|>"), 50256u);
  EXPECT_EQ(gpt2().token_id("Ġthe"), 262u);
  EXPECT_EQ(gpt2().token_id("no-such-token"), std::nullopt);
  EXPECT_TRUE(gpt2().is_special(50256));
  EXPECT_FALSE(gpt2().is_special(262));
  EXPECT_EQ(gpt2().eos_id(), 50256u);
  EXPECT_EQ(gpt2().token_bytes(262), " the");
}

TEST(TokenizerGpt2, SpecialTokensMatchedOnlyByEncode) {
  const std::vector<std::uint32_t> with{5239, 50256, 3549, 2420};
  EXPECT_EQ(gpt2().encode("text<|endoftext|>more text"), with);
  const auto plain = gpt2().encode_ordinary("text<|endoftext|>more text");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256u), 0);
  EXPECT_EQ(gpt2().decode(plain), "text<|endoftext|>more text");
  EXPECT_EQ(gpt2().decode(with, /*skip_special=*/true), "textmore text");
}

TEST(TokenizerGpt2, FromDirFindsTokenizerJson) {
  const auto tok = forge::Tokenizer::from_dir(kDir);
  EXPECT_EQ(tok.encode("Hello, world!"), (std::vector<std::uint32_t>{15496, 11, 995, 0}));
}

TEST(TokenizerGpt2, RoundTripsEveryCharacterClassAndRejectsInvalidUtf8) {
  std::string all;
  for (int b = 0; b < 128; ++b) all.push_back(static_cast<char>(b));
  all += "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA4\x97\xC2\xA0";  // é 中 🤗 NBSP: 2-, 3-, 4-byte characters
  const auto ids = gpt2().encode(all);
  std::string raw;
  for (auto id : ids) raw += gpt2().token_bytes(id);
  EXPECT_EQ(raw, all);
  EXPECT_THROW((void)gpt2().encode("ok\xFF"), forge::ValueError);
  // Repeated words take the per-piece cache; the ids must not change.
  const std::string twice = "repeat repeat repeat";
  EXPECT_EQ(gpt2().encode(twice), gpt2().encode(twice));
  EXPECT_EQ(gpt2().decode(gpt2().encode(twice)), twice);
}

TEST(TokenizerGpt2, DecodeRejectsOutOfRangeIds) {
  const std::vector<std::uint32_t> ids{15496, 50257};
  try {
    (void)gpt2().decode(ids);
    FAIL() << "no ValueError for id 50257";
  } catch (const forge::ValueError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[tokenizer]"), std::string::npos) << what;
    EXPECT_NE(what.find("50257"), std::string::npos) << what;
    EXPECT_NE(what.find("vocab size 50257"), std::string::npos) << what;
  }
  EXPECT_THROW(forge::StreamDecoder(gpt2()).push(1000000), forge::ValueError);
  EXPECT_THROW((void)gpt2().token_bytes(50257), forge::ValueError);
}
