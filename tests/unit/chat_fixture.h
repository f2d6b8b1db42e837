// A chat-capable tiny model for CLI tests: tests/fixtures/llama-tiny given a
// small byte-level BPE tokenizer (ids < 1000, the model's vocabulary) and
// SmolLM2's chat template.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "unit/this_build.h"

namespace forge::testing {

// GPT-2's byte <-> printable character map of byte-level BPE, as UTF-8.
inline std::string byte_char(int b) {
  int cp = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int x = 0; x < b; ++x)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) s += char(cp);
  else {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// A byte-level BPE of exactly 1000 ids: 4 special tokens, the 256 bytes, and
// 740 merges (letter pairs, then a space before a letter or digit).
inline nlohmann::json tiny_tokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  nlohmann::json added = nlohmann::json::array();
  const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|turn_end|>"};
  for (int i = 0; i < 4; ++i) {
    vocab[specials[i]] = i;
    added.push_back({{"id", i}, {"content", specials[i]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = 4 + b;
  nlohmann::json merges = nlohmann::json::array();
  auto merge = [&](const std::string& a, const std::string& b) {
    if (vocab.contains(a + b)) return;
    merges.push_back({a, b});
    vocab[a + b] = vocab.size();
  };
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) merge(std::string(1, a), std::string(1, b));
  const std::string space = byte_char(' ');
  for (char c = 'a'; c <= 'z'; ++c) merge(space, std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) merge(space, std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) merge(space, std::string(1, c));
  for (const char* p : {".", "!"}) merge(p, space);
  EXPECT_EQ(vocab.size(), 1000u);
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", byte_level},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
            {"vocab", vocab}, {"merges", merges}}}};
}

inline void write_text(const std::filesystem::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

// llama-tiny + the tokenizer + SmolLM2's template, in `root`/model.
inline std::filesystem::path make_chat_model(const std::filesystem::path& root) {
  const std::filesystem::path src = std::filesystem::path(forge::testing::test_data_dir()) / "llama-tiny";
  const std::filesystem::path dir = root / "model";
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) std::filesystem::copy_file(src / f, dir / f);
  write_text(dir / "tokenizer.json", tiny_tokenizer().dump());
  std::ifstream in(std::filesystem::path(forge::testing::test_data_dir()) / "chat-templates" / "smollm2.json");
  const nlohmann::json smol = nlohmann::json::parse(in);
  const nlohmann::json cfg = {{"bos_token", smol["bos_token"]}, {"eos_token", smol["eos_token"]}, {"chat_template", smol["template"]}};
  write_text(dir / "tokenizer_config.json", cfg.dump());
  return dir;
}

}  // namespace forge::testing
