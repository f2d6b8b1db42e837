// forge tokenize / detokenize / bench tokenizer, run as a user would.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "unit/cli_shell.h"
#include "unit/this_build.h"

namespace {

using forge::testing::CliResult;
using forge::testing::run_forge;

const std::string kTokenizer = std::string(forge::testing::test_data_dir()) + "/tokenizer-gpt2/tokenizer.json";

}  // namespace

TEST(TokenizerCli, TokenizePrintsIds) {
  CliResult r = run_forge("tokenize --tokenizer " + kTokenizer + " --text 'Hello, world!'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "15496 11 995 0\n");
  r = run_forge("tokenize --model " + std::string(forge::testing::test_data_dir()) +
          "/tokenizer-gpt2 --text 'Hello, world!' --json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], (std::vector<int>{15496, 11, 995, 0}));
}

TEST(TokenizerCli, DetokenizePrintsTextAndRejectsBadIds) {
  CliResult r = run_forge("detokenize --tokenizer " + kTokenizer + " --ids 15496,11,995,0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "Hello, world!\n");
  r = run_forge("detokenize --tokenizer " + kTokenizer + " --ids 15496,50257");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("[tokenizer] token id 50257 is out of range for vocab size 50257"),
            std::string::npos)
      << r.out;
  r = run_forge("detokenize --tokenizer " + kTokenizer + " --ids 1,x2");
  EXPECT_EQ(r.code, 2);  // a usage error, as a bad --prompt-ids is
  EXPECT_NE(r.out.find("--ids item 'x2' is not a token id"), std::string::npos) << r.out;
  r = run_forge("detokenize --tokenizer " + kTokenizer + " --ids ''");  // no ids: no text
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "\n");
}

TEST(TokenizerCli, BenchReportsThroughputJson) {
  const CliResult r = run_forge("bench tokenizer --tokenizer " + kTokenizer + " --text-file " +
                    std::string(forge::testing::test_data_dir()) + "/tokenizer-gpt2/cases.json --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["bench"], "tokenizer");
  EXPECT_GT(j["bytes"].get<double>(), 0);
  EXPECT_GT(j["tokens"].get<double>(), 0);
  EXPECT_GT(j["mb_per_s"].get<double>(), 0);
}

TEST(TokenizerCli, InvalidUtf8IsAOneLineErrorNamingTheOffset) {
  const std::string file = "/tmp/forge_tok_invalid_" + std::to_string(::getpid()) + ".txt";
  {
    FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("abc\xC3(", f);
    std::fclose(f);
  }
  const CliResult r =
      run_forge("tokenize --tokenizer " + kTokenizer + " --text-file " + file + " --json");
  std::remove(file.c_str());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("not valid UTF-8 at byte offset 3"), std::string::npos) << r.out;
}

TEST(TokenizerCli, IdsTakeCommasOrSpaces) {
  for (const char* ids :
       {"15496,11,995,0", "'15496 11 995 0'", "15496 11 995 0", "15496, 11 995,0"}) {
    const CliResult r = run_forge("detokenize --tokenizer " + kTokenizer + " --ids " + ids + " --json");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out, "{\"text\":\"Hello, world!\"}\n") << ids;
  }
}

TEST(TokenizerCli, BenchMeasuresEveryStyle) {
  const CliResult r =
      run_forge("bench tokenizer --styles-dir " + std::string(forge::testing::test_data_dir()) + " --text-file " +
          std::string(forge::testing::test_data_dir()) + "/tokenizer-gpt2/cases.json --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& s : j["styles"]) {
    names.push_back(s["style"]);
    EXPECT_GT(s["mb_per_s"].get<double>(), 0) << s.dump();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gpt2", "gpt2-regex", "llama3", "qwen2", "smollm2",
                                             "spm", "metaspace"}));
  // The hand-written split and the regex engine give the same tokens.
  EXPECT_EQ(j["styles"][0]["tokens"], j["styles"][1]["tokens"]);
}
