// Every case of tests/fixtures/tokenizer-*/cases.json and cases-extra.json
// (made by Hugging Face tokenizers): ids with and without the post-processor's
// tokens, decoded text with and without special tokens, streaming decode; two
// cases of each through the forge command line. GPT-2's hand-written split against the same pattern
// run by the regex engine.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "forge/tokenizer.h"
#include "text/utf8.h"
#include "unit/this_build.h"

namespace {

using nlohmann::json;
using Ids = std::vector<std::uint32_t>;
namespace fs = std::filesystem;

const char* const kStyles[] = {"gpt2", "llama3", "qwen2", "smollm2", "spm", "metaspace"};

std::string dir_of(const std::string& style) {
  return std::string(forge::testing::test_data_dir()) + "/tokenizer-" + style;
}

// cases.json, then (with_extra) cases-extra.json where a fixture has one
// (cases made later by the same library, in the same format).
json cases_of(const std::string& style, bool with_extra = true) {
  std::ifstream in(dir_of(style) + "/cases.json");
  json cases = json::parse(in);
  std::ifstream extra(dir_of(style) + "/cases-extra.json");
  if (with_extra && extra) {
    for (json& c : json::parse(extra)) cases.push_back(std::move(c));
  }
  return cases;
}

const forge::Tokenizer& tokenizer(const std::string& style) {
  static std::map<std::string, forge::Tokenizer> cache;
  auto it = cache.find(style);
  if (it == cache.end()) {
    it = cache.emplace(style, forge::Tokenizer::from_file(dir_of(style) + "/tokenizer.json")).first;
  }
  return it->second;
}

std::string run_cli(const std::string& args, int& code) {
  const std::string cmd = std::string(forge::testing::cli_path()) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    code = -1;
    return "popen failed";
  }
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class TokenizerFixture : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(TokenizerFixture, EveryCaseMatchesHuggingFace) {
  const std::string style = GetParam();
  const forge::Tokenizer& tok = tokenizer(style);
  const json cases = cases_of(style);
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const Ids ids = c["ids"].get<Ids>();
    EXPECT_EQ(tok.encode(text), ids) << style << ": " << text;
    if (c.contains("ids_no_special")) {
      EXPECT_EQ(tok.encode(text, false), c["ids_no_special"].get<Ids>()) << style << ": " << text;
    }
    EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>()) << style << ": " << text;
    if (c.contains("decoded_skip_special")) {
      EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>())
          << style << ": " << text;
    }
  }
}

TEST_P(TokenizerFixture, StreamingEqualsFullDecodeAndNeverSplitsACharacter) {
  const std::string style = GetParam();
  const forge::Tokenizer& tok = tokenizer(style);
  for (const auto& c : cases_of(style)) {
    const Ids ids = c["ids"].get<Ids>();
    for (bool skip : {false, true}) {
      forge::StreamDecoder dec(tok, skip);
      std::string out;
      for (auto id : ids) {
        const std::string piece = dec.push(id);
        EXPECT_EQ(forge::text::utf8_lossy(piece), piece) << "invalid UTF-8 from " << style;
        out += piece;
      }
      out += dec.flush();
      EXPECT_EQ(out, tok.decode(ids, skip)) << style << ": " << c["text"];
    }
  }
}

TEST_P(TokenizerFixture, CommandLineMatchesTheFirstCases) {
  const std::string style = GetParam();
  const std::string file = dir_of(style) + "/tokenizer.json";
  const json cases = cases_of(style, false);
  // The first case and the middle one of the fixture's own.
  for (const json& c : {cases[0], cases[cases.size() / 2]}) {
    const fs::path text_file = fs::temp_directory_path() /
                               ("forge_tok_cli_" + style + std::to_string(::getpid()) + ".txt");
    std::ofstream(text_file, std::ios::binary) << c["text"].get<std::string>();
    int code = 0;
    std::string out = run_cli(
        "tokenize --tokenizer " + file + " --text-file " + text_file.string() + " --json", code);
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(json::parse(out)["ids"], c["ids"]) << style;
    if (c.contains("ids_no_special")) {
      out = run_cli("tokenize --tokenizer " + dir_of(style) + " --text-file " + text_file.string() +
                        " --no-special --json",
                    code);
      ASSERT_EQ(code, 0) << out;
      EXPECT_EQ(json::parse(out)["ids"], c["ids_no_special"]) << style;
    }
    fs::remove(text_file);
    std::string ids;
    for (const auto& id : c["ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
    out = run_cli("detokenize --tokenizer " + file + " --ids " + ids + " --json", code);
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(json::parse(out)["text"], c["decoded"]) << style;
    if (c.contains("decoded_skip_special")) {
      out = run_cli("detokenize --tokenizer " + file + " --ids " + ids + " --skip-special --json",
                    code);
      ASSERT_EQ(code, 0) << out;
      EXPECT_EQ(json::parse(out)["text"], c["decoded_skip_special"]) << style;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Styles, TokenizerFixture, ::testing::ValuesIn(kStyles));

TEST(TokenizerFixtures, Gpt2HandWrittenSplitEqualsTheRegexEngine) {
  // The same pattern, wrapped in a group so the loader does not recognise it.
  std::ifstream in(dir_of("gpt2") + "/tokenizer.json");
  json j = json::parse(in);
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern",
          {{"Regex",
            R"re((?:'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+))re"}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  const fs::path file =
      fs::temp_directory_path() / ("forge_gpt2_regex_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << j.dump();
  const auto by_regex = forge::Tokenizer::from_file(file);
  fs::remove(file);
  const forge::Tokenizer& by_hand = tokenizer("gpt2");
  std::vector<std::string> texts;
  for (const char* style : kStyles) {
    for (const auto& c : cases_of(style)) texts.push_back(c["text"]);
  }
  // Classes at their edges: other scripts' letters and digits, odd spaces, marks.
  texts.push_back(
      "\xE4\xB8\xAD\xE6\x96\x87 \xD9\xA3\xD9\xA4 x\xC2\xA0y \xE2\x80\x83z\n\n \t\r\n a\xCC\x81 "
      "\xF0\x9F\xA4\x97!!");
  texts.push_back("   'll've'S 12345 ?? \xE2\x85\xA7 \xC2\xB2 end   ");
  for (const auto& t : texts) EXPECT_EQ(by_hand.encode(t), by_regex.encode(t)) << t;
}
