// libFuzzer target for `forge train`'s data files (tools/forge/train_data.cpp):
// the input is written to a file and read as a token file (which must be
// refused with IoError or give exactly the ids it holds), as a JSONL file
// (refused with ValueError naming the line, or byte ids) and as training text
// with the byte tokenizer, which is split and sampled into windows whose
// tokens must come from the text. Anything else is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "forge/error.h"
#include "../unit/process_temp_dir.h"
#include "train_data.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_train_data: invariant failed: %s\n", what);
    std::abort();
  }
}

// Written with a stream, not std::filesystem::copy_file: libFuzzer's timeout
// timer interrupts system calls, and copy_file gives up on EINTR (it threw
// "Interrupted system call" here), where the stream's writes retry.
void write_file(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  f.close();
  check(bool(f), "the input is written to a scratch file");
}

const std::filesystem::path& scratch() {
  static const std::filesystem::path p = forge::testing::process_temp_dir("fuzz_train") / "tokens";
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_file(scratch(), data, size);
  try {
    std::vector<uint32_t> ids = forge::cli::read_token_file(scratch());
    check(size == 16 + ids.size() * 4, "token count matches the file size");
    check(ids.empty() || std::memcmp(ids.data(), data + 16, ids.size() * 4) == 0, "ids are the file's");
  } catch (const forge::IoError&) {
  }

  forge::cli::TrainTokenizer bytes;  // no BPE: ids are the bytes
  // The same bytes as a .jsonl file: {"text"} and {"messages"} lines, the
  // conversations rendered as the bytes of their JSON.
  {
    const std::string jsonl = scratch().string() + ".jsonl";
    write_file(jsonl, data, size);
    const forge::cli::ChatEncoder chat = [](const nlohmann::ordered_json& m) {
      const std::string s = m.dump();
      return std::vector<uint32_t>(reinterpret_cast<const unsigned char*>(s.data()),
                                   reinterpret_cast<const unsigned char*>(s.data()) + s.size());
    };
    try {
      for (uint32_t id : forge::cli::tokenize_files({jsonl}, bytes, chat)) check(id < 256, "jsonl ids are bytes");
    } catch (const forge::ValueError&) {
      // A malformed line.
    }
  }
  std::vector<uint32_t> ids = forge::cli::tokenize_files({scratch().string()}, bytes);
  check(ids.size() == size, "one id per byte");
  const int64_t T = size ? 1 + data[0] % 8 : 4;
  try {
    forge::cli::TrainSplit s = forge::cli::split_tokens(ids, 0.25, T);
    check(int64_t(s.train.size()) > T && int64_t(s.val.size()) > T, "both parts hold a window");
    check(s.train.size() + s.val.size() == ids.size(), "the split keeps every token");
    forge::Gpt2MicroBatch b = forge::cli::sample_windows(s.train, 2, T, size, 0, 3, 1);
    std::vector<uint32_t> in = b.ids.to_vector<uint32_t>();
    check(int64_t(in.size()) == 2 * T && int64_t(b.targets.size()) == 2 * T, "window sizes");
    for (size_t i = 0; i < in.size(); ++i) check(in[i] < 256 && b.targets[i] >= 0 && b.targets[i] < 256, "byte ids");
  } catch (const forge::ValueError&) {
    // Too little text for two windows.
  }
  return 0;
}
