// forge bench tokenizer [--tokenizer FILE | --model DIR | --styles-dir DIR] [--text-file F...]
//                       [--repeat N] [--json]
// Encoding throughput on one core. Without --text-file it reads the text files
// of the fortunes package (/usr/share/games/fortunes, a few MB of English).
// Without --tokenizer / --model it measures each tokenizer style in
// --styles-dir (tokenizer-<style>/tokenizer.json; default tests/fixtures),
// and GPT-2 a second time with its split pattern run by the regex engine
// ("gpt2-regex") beside the hand-written split ("gpt2").
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

const char* const kStyles[] = {"gpt2", "llama3", "qwen2", "smollm2", "spm", "metaspace"};

struct BenchArgs {
  std::string tokenizer;
  std::string styles_dir = "tests/fixtures";
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

struct Result {
  std::size_t bytes = 0, tokens = 0;
  double seconds = 0;
  double mb_per_s() const { return bytes / 1e6 / seconds; }
};

Result measure(const Tokenizer& tok, const std::vector<std::string>& texts, int repeat) {
  Result r;
  (void)tok.encode(texts.front());  // warm the piece cache's allocation
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeat; ++i) {
    for (const auto& t : texts) {
      r.tokens += tok.encode(t).size();
      r.bytes += t.size();
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// GPT-2's tokenizer.json with its split written so that the hand-written path
// does not recognise it: the same pattern, run by the regex engine.
Tokenizer gpt2_through_regex(const fs::path& gpt2_json) {
  nlohmann::json j = nlohmann::json::parse(text::read_text_file(gpt2_json));
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
  const fs::path tmp = fs::temp_directory_path() /
                       ("forge-bench-gpt2-regex-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(tmp);
    out << j.dump();
  }
  try {
    Tokenizer tok = Tokenizer::from_file(tmp);
    fs::remove(tmp);
    return tok;
  } catch (...) {
    fs::remove(tmp);
    throw;
  }
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
  std::vector<std::string> texts;
  for (const auto& f : files) texts.push_back(text::read_text_file(f));

  if (!a.tokenizer.empty()) {
    const Result r = measure(Tokenizer::from_path(a.tokenizer), texts, a.repeat);
    if (a.json) {
      std::cout << nlohmann::json{{"bench", "tokenizer"}, {"files", files.size()},
                                  {"bytes", r.bytes},     {"tokens", r.tokens},
                                  {"seconds", r.seconds}, {"mb_per_s", r.mb_per_s()}}
                       .dump()
                << "\n";
    } else {
      std::printf("tokenizer: %zu files, %zu bytes -> %zu tokens in %.3f s: %.1f MB/s\n",
                  files.size(), r.bytes, r.tokens, r.seconds, r.mb_per_s());
    }
    return;
  }

  std::vector<std::pair<std::string, Tokenizer>> styles;
  for (const char* style : kStyles) {
    const fs::path file =
        fs::path(a.styles_dir) / (std::string("tokenizer-") + style) / "tokenizer.json";
    if (!fs::exists(file)) {
      throw IoError("[bench tokenizer] no '" + file.string() +
                    "': pass --styles-dir or --tokenizer");
    }
    styles.emplace_back(style, Tokenizer::from_file(file));
    if (std::string(style) == "gpt2") styles.emplace_back("gpt2-regex", gpt2_through_regex(file));
  }
  nlohmann::json rows = nlohmann::json::array();
  std::size_t bytes = 0;
  for (const auto& [name, tok] : styles) {
    const Result r = measure(tok, texts, a.repeat);
    bytes = r.bytes;
    rows.push_back({{"style", name},
                    {"tokens", r.tokens},
                    {"seconds", r.seconds},
                    {"mb_per_s", r.mb_per_s()}});
    if (!a.json) {
      std::printf("%-11s %zu bytes -> %zu tokens in %.3f s: %.1f MB/s\n", name.c_str(), r.bytes,
                  r.tokens, r.seconds, r.mb_per_s());
    }
  }
  if (a.json) {
    std::cout << nlohmann::json{{"bench", "tokenizer"},
                                {"files", files.size()},
                                {"bytes", bytes},
                                {"styles", rows}}
                     .dump()
              << "\n";
  }
}

const bool registered = register_bench(
    {"tokenizer", "Tokenizer encode throughput (MB/s)", [](CLI::App& sub) {
       auto args = std::make_shared<BenchArgs>();
       auto* group = sub.add_option_group("tokenizer", "which tokenizers (default: every style)");
       group->add_option("-m,--model", args->tokenizer, "Model folder")->check(CLI::ExistingDirectory);
       group->add_option("--tokenizer", args->tokenizer, "A tokenizer.json file or folder")
           ->check(CLI::ExistingPath);
       group->add_option("--styles-dir", args->styles_dir,
                         "Folder with tokenizer-<style>/tokenizer.json (default tests/fixtures)");
       group->require_option(0, 1);
       sub.add_option("--text-file", args->text_files, "Text files to encode (default: fortunes)")
           ->check(CLI::ExistingFile);
       sub.add_option("--repeat", args->repeat, "Encode the texts this many times");
       sub.add_flag("--json", args->json, "Print one JSON object");
       sub.callback([args] { bench(*args); });
     }});

}  // namespace
}  // namespace forge::cli
