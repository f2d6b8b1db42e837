// Training data for `forge train`: text files tokenized once into a binary
// token file, a held-out tail for validation, and batches of random
// contiguous windows whose positions are a pure function of (seed, step,
// micro-batch, row), so a resumed run draws exactly the batches an
// uninterrupted one would.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "forge/gpt2_train.h"
#include "forge/tokenizer.h"

namespace forge::cli {

// Text <-> ids for training: a BPE tokenizer, or raw bytes (ids 0..255).
struct TrainTokenizer {
  std::optional<Tokenizer> bpe;  // empty: bytes
  std::vector<uint32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<uint32_t>& ids) const;
  std::optional<uint32_t> eos() const { return bpe ? bpe->eos_id() : std::nullopt; }
  std::string name() const { return bpe ? "bpe" : "bytes"; }
};

// Token files: "FGTOK001", u64 count, then count u32 ids (little-endian).
void write_token_file(const std::filesystem::path& path, const std::vector<uint32_t>& ids);
std::vector<uint32_t> read_token_file(const std::filesystem::path& path);

// A token of the stream that is no target (a prompt token of a
// conversation): the id with this bit set. sample_windows gives such a
// position the target -1, so the loss covers only the other tokens.
constexpr uint32_t kNoLoss = 0x80000000u;

// Renders a conversation (a JSON list of {role, content}) into ids, kNoLoss
// set on every token outside the assistant's replies.
using ChatEncoder = std::function<std::vector<uint32_t>(const nlohmann::ordered_json& messages)>;

// Reads and tokenizes every file (an end-of-text id between documents when
// the tokenizer has one). A .jsonl file holds one document a line: {"text":
// "..."} or {"messages": [...]} (a conversation, through `chat`); blank lines
// are skipped. IoError naming a missing or unreadable file, ValueError naming
// the file and line of a malformed one.
std::vector<uint32_t> tokenize_files(const std::vector<std::string>& files, const TrainTokenizer& tok,
                                     const ChatEncoder& chat = {});

struct TrainSplit {
  std::vector<uint32_t> train, val;
};
// The last `val_fraction` of the tokens (at least T + 1 when there is room)
// is held out. ValueError when either part has fewer than T + 1 tokens.
TrainSplit split_tokens(const std::vector<uint32_t>& ids, double val_fraction, int64_t T);

// A micro-batch of `rows` windows of T + 1 tokens from `tokens`: inputs are
// the first T, targets the last T (-1 for a kNoLoss token). Window r starts at
// derive_key(seed, stream, step, first_row + r) mod (size - T).
Gpt2MicroBatch sample_windows(const std::vector<uint32_t>& tokens, int64_t rows, int64_t T, uint64_t seed,
                              uint64_t stream, int64_t step, int64_t first_row);

}  // namespace forge::cli
