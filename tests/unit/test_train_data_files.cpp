// The training data readers on broken files (tools/forge/train_data.cpp),
// including the inputs the fuzzer (tests/fuzz/fuzz_train_data.cpp) found.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "forge/error.h"
#include "train_data.h"
#include "unit/this_build.h"

using forge::IoError;
using forge::cli::read_token_file;
using forge::cli::write_token_file;

namespace {

const std::string kFuzz = std::string(forge::testing::test_data_dir()) + "/../fuzz/corpus_train_data/";

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::path(::testing::TempDir()) / ("forge_train_data_" + name);
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

template <class F>
void expect_io_error(F&& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << what;
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a forge::IoError: " << e.what();
  }
}

}  // namespace

TEST(TrainDataFiles, TokenFileRoundTrip) {
  const auto p = scratch("ok.bin");
  write_token_file(p, {0, 1, 50256, 7});
  EXPECT_EQ(read_token_file(p), (std::vector<uint32_t>{0, 1, 50256, 7}));
  write_token_file(p, {});
  EXPECT_TRUE(read_token_file(p).empty());
  std::filesystem::remove(p);
}

TEST(TrainDataFiles, CountThatWrapsIsAnIoError) {
  // Fuzzer finding: a count of 2^62 + 1 made 16 + 4n wrap to the file's size,
  // and allocating n ids threw std::length_error.
  expect_io_error([] { read_token_file(kFuzz + "regression_count_wraps"); }, "its header announces");
  expect_io_error([] { read_token_file(kFuzz + "tokens_count_too_big"); }, "its header announces");
}

TEST(TrainDataFiles, TruncatedAndForeignFiles) {
  expect_io_error([] { read_token_file(kFuzz + "tokens_truncated"); }, "holds");
  expect_io_error([] { read_token_file(kFuzz + "text_short"); }, "is not a forge token file");
  const auto p = scratch("short.bin");
  write_bytes(p, "FGTOK00");
  expect_io_error([&] { read_token_file(p); }, "is not a forge token file");
  std::filesystem::remove(p);
  expect_io_error([] { read_token_file(scratch("missing.bin")); }, "cannot open");
}
