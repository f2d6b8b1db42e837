// The tokenizer of `--tokenizer bytes`: id b for byte b (0..255) and
// <|endoftext|> as id 256, written as a Hugging Face tokenizer.json (byte-level
// BPE without merges) so a model trained on bytes can be prompted with text.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

namespace forge::cli {

constexpr int64_t kByteVocabSize = 257;  // 256 bytes + <|endoftext|>
constexpr uint32_t kByteEos = 256;       // <|endoftext|>

// The tokenizer.json text.
std::string byte_tokenizer_json();

// Points bos_token_id and eos_token_id of a model folder's config.json and
// generation_config.json at `id` (write_gpt2_checkpoint writes GPT-2's 50256,
// out of range for the byte vocab).
void set_special_token_ids(const std::filesystem::path& model_dir, uint32_t id);

}  // namespace forge::cli
