// forge tokenize / detokenize / bench tokenizer, run as a user would.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>

namespace {

const std::string kTokenizer = std::string(FORGE_TEST_DATA) + "/tokenizer-gpt2/tokenizer.json";

struct CliResult {
  int code;
  std::string out;  // stdout and stderr
};

CliResult run(const std::string& args) {
  const std::string cmd = std::string(FORGE_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST(TokenizerCli, TokenizePrintsIds) {
  CliResult r = run("tokenize --tokenizer " + kTokenizer + " --text 'Hello, world!'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "15496 11 995 0\n");
  r = run("tokenize --model " + std::string(FORGE_TEST_DATA) +
          "/tokenizer-gpt2 --text 'Hello, world!' --json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], (std::vector<int>{15496, 11, 995, 0}));
}

TEST(TokenizerCli, DetokenizePrintsTextAndRejectsBadIds) {
  CliResult r = run("detokenize --tokenizer " + kTokenizer + " --ids 15496,11,995,0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "Hello, world!\n");
  r = run("detokenize --tokenizer " + kTokenizer + " --ids 15496,50257");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("[tokenizer] token id 50257 is out of range for vocab size 50257"),
            std::string::npos)
      << r.out;
  r = run("detokenize --tokenizer " + kTokenizer + " --ids 1,x2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("'x2'"), std::string::npos) << r.out;
}

TEST(TokenizerCli, BenchReportsThroughputJson) {
  const CliResult r = run("bench tokenizer --tokenizer " + kTokenizer + " --text-file " +
                    std::string(FORGE_TEST_DATA) + "/tokenizer-gpt2/cases.json --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["bench"], "tokenizer");
  EXPECT_GT(j["bytes"].get<double>(), 0);
  EXPECT_GT(j["tokens"].get<double>(), 0);
  EXPECT_GT(j["mb_per_s"].get<double>(), 0);
}
