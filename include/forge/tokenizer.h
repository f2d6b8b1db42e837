// Byte-level BPE tokenizer (GPT-2 and SmolLM2 style), loaded from a
// Hugging Face tokenizer.json or from vocab.json + merges.txt. Pre-tokenization
// is GPT-2's split pattern (optionally after a Digits split); other Split
// patterns (Llama-3's, Qwen's) are rejected with an IoError when loading.
//
//   auto tok = forge::Tokenizer::from_dir("models/gpt2");
//   std::vector<uint32_t> ids = tok.encode("Hello, world!");   // {15496, 11, 995, 0}
//   std::string text = tok.decode(ids);                        // "Hello, world!"
//
// encode() returns the model's tokens only: post-processing that inserts BOS /
// EOS is left to the caller (see bos_id() / eos_id()). Loading errors are
// forge::IoError naming the file; bad ids are forge::ValueError.
// A Tokenizer is cheap to copy (shared, immutable state) and safe to use from
// several threads at once.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace forge {

class Tokenizer {
 public:
  // A tokenizer.json file (model type BPE with a ByteLevel pre-tokenizer).
  static Tokenizer from_file(const std::filesystem::path& tokenizer_json);
  // A model folder holding tokenizer.json, or vocab.json + merges.txt, or
  // GPT-2's original encoder.json + vocab.bpe. tokenizer_config.json and
  // config.json, when present, name the special and BOS / EOS tokens.
  static Tokenizer from_dir(const std::filesystem::path& dir);
  // from_dir for a folder, from_file otherwise.
  static Tokenizer from_path(const std::filesystem::path& file_or_dir);

  // Token ids of `text`. Added tokens (such as "<|endoftext|>") written in
  // the text are matched first and become their single id. Invalid UTF-8 is
  // encoded byte by byte.
  std::vector<std::uint32_t> encode(std::string_view text) const;
  // Like encode(), but added tokens in the text are encoded as plain text.
  std::vector<std::uint32_t> encode_ordinary(std::string_view text) const;

  // Text of `ids`; bytes that do not form valid UTF-8 become U+FFFD.
  // Throws ValueError for an id >= vocab_size() or one without a token.
  std::string decode(std::span<const std::uint32_t> ids, bool skip_special = false) const;
  // Raw bytes of one token (may be part of a UTF-8 character).
  const std::string& token_bytes(std::uint32_t id) const;

  // One more than the largest id, added tokens included.
  std::size_t vocab_size() const;
  // Id of a token by its vocab spelling ("Ġthe") or added-token text ("<|endoftext|>").
  std::optional<std::uint32_t> token_id(std::string_view token) const;
  bool is_special(std::uint32_t id) const;
  std::optional<std::uint32_t> bos_id() const;
  std::optional<std::uint32_t> eos_id() const;

  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// Incremental decoding for streaming generation: push() returns the text that
// is complete so far and holds back a UTF-8 character whose bytes are split
// across tokens until its last byte arrives. The concatenation of all push()
// results and flush() equals Tokenizer::decode of the same ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(Tokenizer tokenizer, bool skip_special = false);
  // Text completed by `id` (possibly empty). Throws ValueError for a bad id.
  std::string push(std::uint32_t id);
  // The held-back bytes, with an incomplete character as U+FFFD; resets.
  std::string flush();

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an unfinished UTF-8 character (at most 3)
};

}  // namespace forge
