// forge bench tokenizer (--tokenizer FILE | --model DIR) [--text-file F...] [--repeat N] [--json]
// Encoding throughput on one core. Without --text-file it reads the text files
// of the fortunes package (/usr/share/games/fortunes, a few MB of English).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "forge/error.h"
#include "forge/tokenizer.h"
#include "text/tokenizer_spec.h"

namespace forge::cli {
namespace {

namespace fs = std::filesystem;

const char* const kFortunes = "/usr/share/games/fortunes";

struct BenchArgs {
  std::string tokenizer;
  std::vector<std::string> text_files;
  int repeat = 1;
  bool json = false;
};

// The fortune text files: regular files without an extension (.dat files are
// binary indexes, .u8 files are links to the text files).
std::vector<std::string> fortune_files() {
  std::vector<std::string> files;
  if (!fs::is_directory(kFortunes)) return files;
  for (const auto& e : fs::directory_iterator(kFortunes)) {
    if (e.is_regular_file() && !e.is_symlink() && !e.path().has_extension()) {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

void bench(const BenchArgs& a) {
  const std::vector<std::string> files = a.text_files.empty() ? fortune_files() : a.text_files;
  if (files.empty()) {
    throw ValueError(std::string("[bench tokenizer] no text: ") + kFortunes +
                     " has no text files, pass --text-file");
  }
  if (a.repeat < 1) {
    throw ValueError("[bench tokenizer] --repeat must be >= 1, got " + std::to_string(a.repeat));
  }
  const Tokenizer tok = Tokenizer::from_path(a.tokenizer);
  std::vector<std::string> texts;
  for (const auto& f : files) texts.push_back(text::read_text_file(f));

  std::size_t bytes = 0, tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < a.repeat; ++r) {
    for (const auto& t : texts) {
      tokens += tok.encode(t).size();
      bytes += t.size();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double mb_per_s = bytes / 1e6 / seconds;
  if (a.json) {
    std::cout << nlohmann::json{{"bench", "tokenizer"}, {"files", files.size()},
                                {"bytes", bytes}, {"tokens", tokens},
                                {"seconds", seconds}, {"mb_per_s", mb_per_s}}
                     .dump()
              << "\n";
  } else {
    std::printf("tokenizer: %zu files, %zu bytes -> %zu tokens in %.3f s: %.1f MB/s\n",
                files.size(), bytes, tokens, seconds, mb_per_s);
  }
}

const bool registered = register_bench(
    {"tokenizer", "Tokenizer encode throughput (MB/s)", [](CLI::App& sub) {
       auto args = std::make_shared<BenchArgs>();
       auto* group = sub.add_option_group("tokenizer", "where the tokenizer is");
       group->add_option("--model", args->tokenizer, "Model folder")->check(CLI::ExistingDirectory);
       group->add_option("--tokenizer", args->tokenizer, "A tokenizer.json file")
           ->check(CLI::ExistingFile);
       group->require_option(1);
       sub.add_option("--text-file", args->text_files, "Text files to encode (default: fortunes)")
           ->check(CLI::ExistingFile);
       sub.add_option("--repeat", args->repeat, "Encode the texts this many times");
       sub.add_flag("--json", args->json, "Print one JSON object");
       sub.callback([args] { bench(*args); });
     }});

}  // namespace
}  // namespace forge::cli
