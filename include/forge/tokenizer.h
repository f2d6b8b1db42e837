// A Hugging Face tokenizer.json, as the `tokenizers` library runs it: BPE
// (byte-level as GPT-2, Llama 3, Qwen2, SmolLM2; or SentencePiece-style with
// byte fallback as Llama 2 / TinyLlama / Mistral) with its normalizer,
// pre-tokenizer, added tokens, post-processor and decoder. Also loads a
// vocab.json + merges.txt folder (GPT-2's pipeline).
//
//   auto tok = forge::Tokenizer::from_dir("models/gpt2");
//   std::vector<uint32_t> ids = tok.encode("Hello, world!");   // {15496, 11, 995, 0}
//   std::string text = tok.decode(ids);                        // "Hello, world!"
//
// encode() adds what the post-processor adds (the BOS of Llama tokenizers)
// unless asked not to. Loading errors are forge::IoError naming the file and
// the unsupported component; bad ids and invalid UTF-8 are forge::ValueError.
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
  // A tokenizer.json file (model type BPE).
  static Tokenizer from_file(const std::filesystem::path& tokenizer_json);
  // A model folder holding tokenizer.json, or vocab.json + merges.txt, or
  // GPT-2's original encoder.json + vocab.bpe. tokenizer_config.json and
  // config.json, when present, name the special and BOS / EOS tokens.
  static Tokenizer from_dir(const std::filesystem::path& dir);
  // from_dir for a folder, from_file otherwise.
  static Tokenizer from_path(const std::filesystem::path& file_or_dir);

  // Token ids of `text`, as Hugging Face's encode(text, add_special_tokens).
  // Added tokens (such as "<|endoftext|>") written in the text are matched
  // first and become their single id; `add_special_tokens` adds the
  // post-processor's tokens (BOS). Invalid UTF-8 is a ValueError naming the
  // byte offset.
  std::vector<std::uint32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Like encode(text, false), but added tokens in the text are encoded as plain text.
  std::vector<std::uint32_t> encode_ordinary(std::string_view text) const;

  // Text of `ids` through the decoder; bytes that do not form valid UTF-8
  // become U+FFFD. `skip_special` leaves special tokens out.
  // Throws ValueError for an id >= vocab_size() or one without a token.
  std::string decode(std::span<const std::uint32_t> ids, bool skip_special = false) const;
  // Raw bytes one token contributes inside a text (may be part of a UTF-8
  // character): the decoder's per-token steps, without Strip / Fuse.
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
// results and flush() equals Tokenizer::decode of the same ids, with one
// exception that no stream can avoid: ByteFallback decodes a run of byte
// tokens whole, so a run of whole characters (already emitted) followed by a
// byte that makes the run invalid is all U+FFFD in the full decode. The
// stream keeps what it emitted, goes on with the new bytes, and exact()
// turns false. Like Hugging Face's DecodeStream it decodes a short window
// (the previous token for context, so Strip / Metaspace see the same
// neighbours) and emits the growth.
class StreamDecoder {
 public:
  explicit StreamDecoder(Tokenizer tokenizer, bool skip_special = false);
  // Text completed by `id` (possibly empty). Throws ValueError for a bad id.
  std::string push(std::uint32_t id);
  // The held-back text, with an incomplete character as U+FFFD; resets.
  std::string flush();
  // False once the stream went on past text the decoder rewrote (above).
  bool exact() const { return exact_; }

 private:
  std::size_t context_to_keep() const;
  std::string window_text();

  Tokenizer tokenizer_;
  bool skip_special_;
  std::vector<std::uint32_t> ids_;  // the window: context tokens, then unemitted ones
  std::size_t context_ = 0;         // ids_[0, context_) are already emitted
  std::string prefix_;              // decode of ids_[0, context_)
  std::string pending_bytes_;       // raw bytes of the unemitted tokens
  bool exact_ = true;
};

}  // namespace forge
