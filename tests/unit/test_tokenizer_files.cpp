// Loading tokenizers from small files written here: vocab.json + merges.txt,
// tokenizer.json with both merge forms, special tokens, and malformed input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/error.h"
#include "forge/tokenizer.h"
#include "text/byte_level.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Ids = std::vector<std::uint32_t>;

// Ids 0..255 are the bytes (id == byte value), then the merges' results.
// "hello" merges to one token; "Ġw" is " w".
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}};
constexpr std::uint32_t kHe = 256, kLl = 257, kHell = 258, kHello = 259, kSpaceW = 260,
                        kEot = 261;

json tiny_vocab() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    vocab[forge::text::bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  }
  std::uint32_t next = 256;
  for (const auto& [a, b] : kMerges) vocab[a + b] = next++;
  vocab["<|endoftext|>"] = next;
  return vocab;
}

json tiny_tokenizer_json(bool pair_merges) {
  json merges = json::array();
  for (const auto& [a, b] : kMerges) {
    merges.push_back(pair_merges ? json::array({a, b}) : json(a + " " + b));
  }
  return json{
      {"version", "1.0"},
      {"added_tokens",
       json::array({{{"id", kEot}, {"content", "<|endoftext|>"}, {"special", true}}})},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", tiny_vocab()}, {"merges", merges}}}};
}

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("forge_tokenizer_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string merges_txt() {
  std::string text = "#version: 0.2\n";
  for (const auto& [a, b] : kMerges) text += a + " " + b + "\n";
  return text;
}

// Expects `fn` to throw E whose message contains every one of `parts`.
template <class E, class F>
void expect_error(F fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& p : parts) EXPECT_NE(what.find(p), std::string::npos) << what << " lacks " << p;
  }
}

}  // namespace

TEST(TokenizerFiles, VocabJsonAndMergesTxt) {
  TempDir dir;
  dir.write("vocab.json", tiny_vocab().dump());
  dir.write("merges.txt", merges_txt());
  const auto tok = forge::Tokenizer::from_dir(dir.path());
  EXPECT_EQ(tok.vocab_size(), 262u);
  EXPECT_EQ(tok.encode("hello world"), (Ids{kHello, kSpaceW, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(tok.encode("hell"), (Ids{kHell}));
  EXPECT_EQ(tok.encode("he"), (Ids{kHe}));
  // Equal ranks merge leftmost first: "lll" is "ll" + "l".
  EXPECT_EQ(tok.encode("lll"), (Ids{kLl, 'l'}));
  EXPECT_EQ(tok.encode("x<|endoftext|>"), (Ids{'x', kEot}));
  EXPECT_EQ(tok.eos_id(), kEot);
  EXPECT_EQ(tok.decode(tok.encode("hello world")), "hello world");
}

TEST(TokenizerFiles, Gpt2OriginalFileNames) {
  TempDir dir;
  dir.write("encoder.json", tiny_vocab().dump());
  dir.write("vocab.bpe", merges_txt());
  EXPECT_EQ(forge::Tokenizer::from_dir(dir.path()).encode("hello"), (Ids{kHello}));
}

TEST(TokenizerFiles, TokenizerJsonWithBothMergeForms) {
  TempDir dir;
  const auto strings = forge::Tokenizer::from_file(
      dir.write("strings.json", tiny_tokenizer_json(false).dump()));
  const auto pairs = forge::Tokenizer::from_file(
      dir.write("pairs.json", tiny_tokenizer_json(true).dump()));
  const std::string text = "hello world, hell<|endoftext|> lll";
  const Ids expected{kHello, kSpaceW, 'o', 'r', 'l', 'd', ',', ' ', kHell, kEot, ' ', kLl, 'l'};
  EXPECT_EQ(strings.encode(text), expected);
  EXPECT_EQ(pairs.encode(text), expected);
  EXPECT_EQ(pairs.decode(expected), text);
}

TEST(TokenizerFiles, AddedTokenStripFlagsAndPrefixSpace) {
  TempDir dir;
  json j = tiny_tokenizer_json(false);
  j["added_tokens"].push_back(
      {{"id", 262}, {"content", "<sep>"}, {"special", false}, {"lstrip", true}, {"rstrip", true}});
  j["pre_tokenizer"]["add_prefix_space"] = true;
  const auto tok = forge::Tokenizer::from_file(dir.write("t.json", j.dump()));
  // Each text segment around an added token gets its own prefix space.
  EXPECT_EQ(tok.encode("hello  <sep>  hello"), (Ids{' ', kHello, 262, ' ', kHello}));
  EXPECT_FALSE(tok.is_special(262));
  EXPECT_TRUE(tok.is_special(kEot));
}

TEST(TokenizerFiles, IgnoreMergesUsesWholeWordTokens) {
  TempDir dir;
  json j = tiny_tokenizer_json(false);
  j["model"]["vocab"]["hel"] = 262;  // reachable only as a whole word: no merge makes it
  j["model"]["ignore_merges"] = true;
  const auto tok = forge::Tokenizer::from_file(dir.write("t.json", j.dump()));
  EXPECT_EQ(tok.encode("hel"), (Ids{262}));
  j["model"]["ignore_merges"] = false;
  const auto merged = forge::Tokenizer::from_file(dir.write("u.json", j.dump()));
  EXPECT_EQ(merged.encode("hel"), (Ids{kHe, 'l'}));
}

TEST(TokenizerFiles, SmolLmStylePreTokenizerSequence) {
  TempDir dir;
  json j = tiny_tokenizer_json(false);
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Digits"}, {"individual_digits", true}},
                    {{"type", "Split"},
                     {"pattern",
                      {{"Regex",
                        R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re"}}},
                     {"behavior", "Isolated"},
                     {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  const auto tok = forge::Tokenizer::from_file(dir.write("t.json", j.dump()));
  EXPECT_EQ(tok.encode("he 42"), (Ids{kHe, ' ', '4', '2'}));
}

TEST(TokenizerFiles, MalformedFilesNameTheFileAndProblem) {
  TempDir dir;
  using forge::IoError;
  using forge::Tokenizer;
  const auto bad_json = dir.write("bad.json", "{\"model\": ");
  expect_error<IoError>([&] { Tokenizer::from_file(bad_json); }, {"[tokenizer]", "bad.json", "not valid JSON"});

  const auto no_model = dir.write("nomodel.json", "{\"version\": \"1.0\"}");
  expect_error<IoError>([&] { Tokenizer::from_file(no_model); }, {"nomodel.json", "no \"model\""});

  json j = tiny_tokenizer_json(false);
  j["model"]["type"] = "Unigram";
  const auto unigram = dir.write("unigram.json", j.dump());
  expect_error<IoError>([&] { Tokenizer::from_file(unigram); }, {"unigram.json", "'Unigram'"});

  j = tiny_tokenizer_json(false);
  j["model"]["merges"].push_back("h zz");
  const auto unknown = dir.write("unknown.json", j.dump());
  expect_error<IoError>([&] { Tokenizer::from_file(unknown); }, {"unknown.json", "merge 5", "'zz'"});

  j = tiny_tokenizer_json(false);
  j["model"]["merges"].push_back("abc");
  const auto one_part = dir.write("onepart.json", j.dump());
  expect_error<IoError>([&] { Tokenizer::from_file(one_part); }, {"onepart.json", "'abc'"});

  // An unknown component type is named, whichever component it is.
  const std::pair<const char*, const char*> components[] = {
      {"normalizer", "BertNormalizer"}, {"pre_tokenizer", "UnicodeScripts"},
      {"post_processor", "Frobnicate"}, {"decoder", "CTC"}};
  for (const auto& [key, type] : components) {
    j = tiny_tokenizer_json(false);
    j[key] = {{"type", type}};
    const auto file = dir.write(std::string(key) + ".json", j.dump());
    expect_error<IoError>([&] { Tokenizer::from_file(file); },
                          {std::string(key) + ".json", std::string("'") + type + "'", "not supported"});
  }
  j = tiny_tokenizer_json(false);
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  const auto split = dir.write("split.json", j.dump());
  expect_error<IoError>([&] { Tokenizer::from_file(split); }, {"split.json", "(unclosed"});

  expect_error<IoError>([&] { Tokenizer::from_file(dir.path() / "missing.json"); },
                        {"cannot read", "missing.json"});
  expect_error<IoError>([&] { Tokenizer::from_dir(dir.path()); }, {"has no tokenizer.json"});

  dir.write("vocab.json", "[1, 2]");
  dir.write("merges.txt", merges_txt());
  expect_error<IoError>([&] { Tokenizer::from_dir(dir.path()); }, {"vocab.json", "not a JSON object"});
  dir.write("vocab.json", tiny_vocab().dump());
  dir.write("merges.txt", "#version: 0.2\nh e\nl l x\n");
  expect_error<IoError>([&] { Tokenizer::from_dir(dir.path()); }, {"merges.txt", "line 3", "'l l x'"});
}

TEST(TokenizerFiles, MissingByteTokenIsAValueError) {
  TempDir dir;
  json j = tiny_tokenizer_json(false);
  j["model"]["vocab"].erase("~");
  j["model"]["merges"] = json::array();
  const auto tok = forge::Tokenizer::from_file(dir.write("t.json", j.dump()));
  expect_error<forge::ValueError>([&] { tok.encode("a~"); }, {"0x7E", "no token"});
}

TEST(TokenizerFiles, InvalidUtf8IsAValueErrorNamingTheOffset) {
  TempDir dir;
  const auto tok =
      forge::Tokenizer::from_file(dir.write("t.json", tiny_tokenizer_json(false).dump()));
  expect_error<forge::ValueError>([&] { tok.encode("hello\xFFworld"); },
                                  {"UTF-8", "offset 5", "0xFF"});
  expect_error<forge::ValueError>([&] { tok.encode("ab\xE2\x82"); }, {"offset 2"});  // truncated
}

TEST(TokenizerFiles, AddedTokensNormalizedMatchAfterTheNormalizer) {
  // Hugging Face's rule: normalized tokens match the normalized text (their own
  // content normalized too), the others the raw text.
  TempDir dir;
  json j = tiny_tokenizer_json(false);
  j["normalizer"] = {{"type", "Lowercase"}};
  j["added_tokens"].push_back(
      {{"id", 262}, {"content", "HELL"}, {"special", false}, {"normalized", true}});
  j["added_tokens"].push_back(
      {{"id", 263}, {"content", "WO"}, {"special", false}, {"normalized", false}});
  const auto tok = forge::Tokenizer::from_file(dir.write("t.json", j.dump()));
  EXPECT_EQ(tok.encode("Hello"), (Ids{262, 'o'}));        // "hello" contains "hell"
  EXPECT_EQ(tok.encode("WO"), (Ids{263}));                // raw match before lowercasing
  EXPECT_EQ(tok.encode("wo"), (Ids{'w', 'o'}));           // the raw token is case-sensitive
  EXPECT_EQ(tok.encode_ordinary("WO"), (Ids{'w', 'o'}));  // ordinary: no added tokens, lowercased
}

TEST(TokenizerFiles, AddedTokenSingleWord) {
  TempDir dir;
  json j = tiny_tokenizer_json(false);
  j["added_tokens"].push_back(
      {{"id", 262}, {"content", "ll"}, {"special", false}, {"single_word", true}});
  const auto tok = forge::Tokenizer::from_file(dir.write("t.json", j.dump()));
  // Inside "hello" it is not a word of its own, so BPE merges as usual.
  EXPECT_EQ(tok.encode("hello"), (Ids{kHello}));
  EXPECT_EQ(tok.encode("ll"), (Ids{262}));
  EXPECT_EQ(tok.encode("a ll."), (Ids{'a', ' ', 262, '.'}));
  EXPECT_EQ(tok.encode("a_ll"), (Ids{'a', '_', kLl}));  // '_' is a word character
}

TEST(TokenizerFiles, PostProcessorAddsBosUnlessAskedNot) {
  TempDir dir;
  json j = tiny_tokenizer_json(false);
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array(
           {{{"type", "ByteLevel"}},
            {{"type", "TemplateProcessing"},
             {"single", json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
             {"special_tokens", json::object()}}})}};
  const auto tok = forge::Tokenizer::from_file(dir.write("t.json", j.dump()));
  EXPECT_EQ(tok.encode("hello"), (Ids{kEot, kHello}));
  EXPECT_EQ(tok.encode("hello", false), (Ids{kHello}));
  EXPECT_EQ(tok.decode(Ids{kEot, kHello}, true), "hello");
}
