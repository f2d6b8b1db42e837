// What a tokenizer file describes, before the tables are built: the loaders
// (tokenizer.json, vocab.json + merges.txt, model folder metadata) fill it in
// and Tokenizer::Impl is built from it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/added_tokens.h"
#include "text/bpe_model.h"
#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/post_processor.h"
#include "text/pretokenizer.h"

namespace forge::text {

struct TokenizerSpec {
  BpeConfig bpe;
  std::vector<AddedToken> added;
  Normalizer normalizer;
  std::vector<PreTokenizeStep> pre_steps;
  std::vector<Template> post;  // applied when special tokens are requested
  Decoder decoder;
  std::optional<std::uint32_t> bos, eos;
  std::string source;  // file name for error messages
};

// Token ids a file may use: one past the largest. Tables are sized by the
// largest id, so an id of 4e9 would ask for gigabytes (and 2^32 - 1 wrapped
// the size to 0); released vocabularies stay far below (about 256K).
constexpr std::uint32_t kMaxTokenIds = 1u << 24;

// A token id read from JSON: a non-negative integer below kMaxTokenIds, else
// IoError "[tokenizer] <source>: <what> ..." (nlohmann's get<uint32_t> would
// silently wrap 2^32 to 0).
std::uint32_t json_token_id(const nlohmann::json& j, const std::string& source, const std::string& what);

// Whole file; IoError "[<component>] cannot read '<path>'". A folder, and a
// device that is neither a terminal nor a pipe (/dev/zero, whose reading
// never ends), are refused by name.
std::string read_text_file(const std::filesystem::path& path, const std::string& component = "tokenizer");
// Parsed JSON; IoError naming the file and the parse error.
nlohmann::json read_json_file(const std::filesystem::path& path);

// A Hugging Face tokenizer.json; IoError for anything malformed or unsupported.
TokenizerSpec load_tokenizer_json(const std::filesystem::path& path);
// vocab.json ({"token": id}) with merges.txt (one "a b" per line, "#" comments),
// GPT-2's pre-tokenization, and "<|endoftext|>" as special token when present.
TokenizerSpec load_vocab_merges(const std::filesystem::path& vocab,
                                const std::filesystem::path& merges);
// Reads tokenizer_config.json / config.json in `dir` (when present) for the
// special tokens and BOS / EOS ids; falls back to well-known token names.
void apply_model_metadata(TokenizerSpec& spec, const std::filesystem::path& dir);

}  // namespace forge::text
