// The shared CLI conventions in-process (tools/forge/cli_util.h): id lists with
// commas or spaces, readable range messages, the model-folder and --data
// checks that say what a wrong path is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "forge/error.h"
#include "unit/cli_process.h"

using forge::cli::UsageError;
namespace fs = std::filesystem;

namespace {

// The message of the exception `f` throws ("" if none).
template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CliUtil, IdListsTakeCommasOrSpaces) {
  using V = std::vector<uint32_t>;
  EXPECT_EQ(forge::cli::parse_id_list("1,2,3", "--ids"), (V{1, 2, 3}));
  EXPECT_EQ(forge::cli::parse_id_list("1 2 3", "--ids"), (V{1, 2, 3}));
  EXPECT_EQ(forge::cli::parse_id_list(" 15496, 11\t995\n0 ", "--ids"), (V{15496, 11, 995, 0}));
  EXPECT_EQ(forge::cli::parse_id_list("4294967295", "--ids"), (V{4294967295u}));
  for (const char* bad : {"1,-2", "1,x", "4294967296", "1.5", "+3"}) {
    const std::string m = message_of<UsageError>([&] { forge::cli::parse_id_list(bad, "--prompt-ids"); });
    EXPECT_NE(m.find("--prompt-ids item '"), std::string::npos) << bad << ": " << m;
    EXPECT_NE(m.find("is not a token id"), std::string::npos) << bad << ": " << m;
  }
  EXPECT_NE(message_of<UsageError>([] { forge::cli::parse_id_list(" \t ", "--ids"); }).find("holds no token ids"),
            std::string::npos);
  EXPECT_EQ(forge::cli::parse_id_list(" ", "--ids", /*allow_none=*/true), V{});
  // A comma with no id before it is a typo, not a separator to skip.
  for (const char* bad : {"1,,2", "1, ,2", ",1", " , "}) {
    const std::string m = message_of<UsageError>([&] { forge::cli::parse_id_list(bad, "--prompt-ids"); });
    EXPECT_EQ(m, "--prompt-ids has an empty item between commas in '" + std::string(bad) + "'") << bad;
  }
  EXPECT_EQ(message_of<UsageError>([] { forge::cli::parse_id_list("1,2, ", "--ids"); }), "--ids ends with a comma in '1,2, '");
}

TEST(CliUtil, RangeMessagesAreReadable) {
  CLI::App app;
  int64_t n = 0;
  double p = 0.5;
  forge::cli::check_at_least(app.add_option("-n,--max-new-tokens", n), 0);
  forge::cli::check_between(app.add_option("--top-p", p), 0, 1);
  auto parse_error = [&](std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    return message_of<CLI::ParseError>([&] { app.parse(args); });
  };
  std::string m = parse_error({"-n", "-5"});
  EXPECT_NE(m.find("-n must be >= 0, got -5"), std::string::npos) << m;
  EXPECT_LT(m.size(), 80u) << m;  // no 300-digit range
  m = parse_error({"--max-new-tokens", "abc"});
  EXPECT_NE(m.find("-n must be an integer, got 'abc'"), std::string::npos) << m;
  m = parse_error({"--top-p", "1.5"});
  EXPECT_NE(m.find("--top-p must be in [0, 1], got 1.5"), std::string::npos) << m;
  m = parse_error({"--top-p", "nan"});
  EXPECT_NE(m.find("--top-p must be a number, got 'nan'"), std::string::npos) << m;
  app.parse(std::vector<std::string>{"0.25", "--top-p", "7", "-n"});
  EXPECT_EQ(n, 7);
  EXPECT_EQ(p, 0.25);
}

// List options: commas (spaces after them allowed) or repeated values; an
// empty item is refused by name (CLI11's own delimiter dropped it, so
// "--rows 8,,2" meant 8,2), as is an item that is not an integer in range or
// not one of the allowed names.
TEST(CliUtil, ListOptionsRefuseEmptyAndBadItems) {
  CLI::App app;
  std::vector<int64_t> rows{4};
  std::vector<std::string> layouts{"nn"};
  forge::cli::add_int_list_option(app, "--rows", rows, "rows", 1);
  forge::cli::add_list_option(app, "--layouts", layouts, "layouts", {"nn", "tn", "nt"});
  auto parse = [&](std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.clear();
    return message_of<CLI::ParseError>([&] { app.parse(args); });
  };
  EXPECT_EQ(parse({}), "");
  EXPECT_EQ(rows, (std::vector<int64_t>{4}));  // not given: the default stays
  EXPECT_EQ(parse({"--rows", "8,32", "--layouts", "tn, nt"}), "");
  EXPECT_EQ(rows, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(layouts, (std::vector<std::string>{"tn", "nt"}));
  EXPECT_EQ(parse({"--rows", "8, 16", "--rows", "2"}), "");
  EXPECT_EQ(rows, (std::vector<int64_t>{8, 16, 2}));
  for (const char* bad : {"8,,2", "8,", ",8", "8, ,2"}) {
    const std::string m = parse({"--rows", bad});
    EXPECT_NE(m.find("--rows has an empty item in '" + std::string(bad) + "'"), std::string::npos) << bad << ": " << m;
  }
  EXPECT_NE(parse({"--rows", "8,0"}).find("--rows must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(parse({"--rows", "8,x"}).find("--rows must be an integer, got 'x'"), std::string::npos);
  EXPECT_NE(parse({"--layouts", "nn,tt"}).find("--layouts items must be nn, tn or nt, got 'tt'"), std::string::npos);
  EXPECT_NE(parse({"--layouts", "nn,,tn"}).find("--layouts has an empty item"), std::string::npos);
  EXPECT_EQ(forge::cli::split_list("q_proj, v_proj", "--lora-targets"), (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(message_of<UsageError>([] { forge::cli::split_list("a,", "--x"); }),
            "--x has an empty item in 'a,' (items are separated by commas)");
}

TEST(CliUtil, ModelFolderChecksSayWhatThePathIs) {
  forge::testing::ScratchDir dir("cli_util_model");
  const fs::path model = dir.path / "run" / "checkpoint";
  fs::create_directories(model);
  std::ofstream(model / "config.json") << "{}";
  std::ofstream(model / "model.safetensors") << "x";
  fs::create_directories(dir.path / "empty");

  EXPECT_EQ(forge::cli::check_model_dir(model.string()), model);
  auto msg = [](const fs::path& p) {
    return message_of<forge::IoError>([&] { forge::cli::check_model_dir(p.string(), "--model"); });
  };
  std::string m = msg(dir.path / "run");
  EXPECT_NE(m.find("is a training run; its model is in " + model.string()), std::string::npos) << m;
  m = msg(model / "model.safetensors");
  EXPECT_NE(m.find("is a file; it takes a model folder"), std::string::npos) << m;
  EXPECT_NE(m.find("--model " + model.string()), std::string::npos) << m;
  m = msg(dir.path / "empty");
  EXPECT_NE(m.find("is a folder without config.json"), std::string::npos) << m;
  m = msg(dir.path / "missing");
  EXPECT_NE(m.find("does not exist"), std::string::npos) << m;
}

TEST(CliUtil, DataFoldersStandForTheirTextFiles) {
  forge::testing::ScratchDir dir("cli_util_data");
  fs::create_directories(dir.path / "texts" / "sub");
  std::ofstream(dir.path / "texts" / "b.txt") << "b";
  std::ofstream(dir.path / "texts" / "sub" / "a.md") << "a";
  std::ofstream(dir.path / "texts" / "image.png") << std::string("\x89PNG\0\0", 6);  // binary: skipped
  std::ofstream(dir.path / "texts" / ".hidden.txt") << "hidden";
  std::ofstream(dir.path / "one.txt") << "one";
  fs::create_directories(dir.path / "nothing");
  std::ofstream(dir.path / "nothing" / "data.bin") << std::string("a\0b", 3);

  const auto files = forge::cli::expand_text_files({(dir.path / "one.txt").string(), (dir.path / "texts").string()},
                                                   "--data");
  EXPECT_EQ(files, (std::vector<std::string>{(dir.path / "one.txt").string(), (dir.path / "texts/b.txt").string(),
                                             (dir.path / "texts/sub/a.md").string()}));
  std::string m = message_of<forge::IoError>(
      [&] { forge::cli::expand_text_files({(dir.path / "nothing").string()}, "--data"); });
  EXPECT_NE(m.find("is a directory without text files"), std::string::npos) << m;
  m = message_of<forge::IoError>([&] { forge::cli::expand_text_files({(dir.path / "nope").string()}, "--data"); });
  EXPECT_NE(m.find("--data '" + (dir.path / "nope").string() + "' does not exist"), std::string::npos) << m;
}
