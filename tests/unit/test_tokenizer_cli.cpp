// forge tokenize / detokenize / bench tokenizer, run as a user would.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

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

TEST(TokenizerCli, InvalidUtf8IsAOneLineErrorNamingTheOffset) {
  const std::string file = "/tmp/forge_tok_invalid_" + std::to_string(::getpid()) + ".txt";
  {
    FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("abc\xC3(", f);
    std::fclose(f);
  }
  const CliResult r =
      run("tokenize --tokenizer " + kTokenizer + " --text-file " + file + " --json");
  std::remove(file.c_str());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("not valid UTF-8 at byte offset 3"), std::string::npos) << r.out;
}

TEST(TokenizerCli, IdsTakeCommasOrSpaces) {
  for (const char* ids :
       {"15496,11,995,0", "'15496 11 995 0'", "15496 11 995 0", "15496, 11 995,0"}) {
    const CliResult r = run("detokenize --tokenizer " + kTokenizer + " --ids " + ids + " --json");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out, "{\"text\":\"Hello, world!\"}\n") << ids;
  }
}

TEST(TokenizerCli, BenchMeasuresEveryStyle) {
  const CliResult r =
      run("bench tokenizer --styles-dir " + std::string(FORGE_TEST_DATA) + " --text-file " +
          std::string(FORGE_TEST_DATA) + "/tokenizer-gpt2/cases.json --json");
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
