// The BPE model: vocabulary, merge ranks and the merge loop that turns one
// pre-tokenized piece (UTF-8 text in the vocab's alphabet: byte-level
// characters after a ByteLevel pre-tokenizer, "▁word" after Metaspace)
// into token ids. Each character starts as its own token; a character missing
// from the vocab becomes its <0xXX> byte tokens (byte_fallback) or the unk token
// (consecutive ones fused into one with fuse_unk), as Hugging Face's BPE does.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/pair_map.h"

namespace forge::text {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct BpeConfig {
  StringMap<std::uint32_t> vocab;                            // spelling -> id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::optional<std::string> unk_token;
  bool ignore_merges = false;  // a piece that is a whole vocab token skips merging
  bool byte_fallback = false;
  bool fuse_unk = false;
};

class BpeModel {
 public:
  // Throws IoError "[tokenizer] <source>: ..." for a merge naming an unknown token.
  BpeModel(BpeConfig config, const std::string& source);

  // Holds the per-piece cache for one encode() call if no other thread has it;
  // a thread that finds it taken encodes without the cache.
  class CacheLease {
   public:
    explicit CacheLease(const BpeModel& m) : lock_(m.cache_mutex_, std::try_to_lock) {}
    bool held() const { return lock_.owns_lock(); }

   private:
    std::unique_lock<std::mutex> lock_;
  };

  // Appends the ids of `piece` to `out`. With `raw_bytes`, `piece` is raw
  // bytes that stand for their byte-level characters (a final ByteLevel
  // pre-tokenizer's output, not spelled out: GPT-2's fast path). Throws
  // ValueError for a character without a token when there is neither byte
  // fallback nor an unk token.
  void encode_piece(std::string_view piece, bool raw_bytes, std::vector<std::uint32_t>& out,
                    const CacheLease& lease) const;

  std::uint32_t id_end() const { return static_cast<std::uint32_t>(spelling_.size()); }
  const StringMap<std::uint32_t>& vocab() const { return vocab_; }
  // Vocab spelling of `id` ("" where the vocab has no such id).
  const std::string& spelling(std::uint32_t id) const { return spelling_[id]; }
  bool has(std::uint32_t id) const { return has_[id]; }

 private:
  void merge(std::string_view piece, bool raw_bytes, std::vector<std::uint32_t>& out) const;
  // Appends the starting symbols of `piece` (one per character, or its bytes, or unk).
  void initial_symbols(std::string_view piece, std::vector<std::uint32_t>& ids) const;
  // Appends the starting symbols of raw bytes (each byte's byte-level character).
  void byte_symbols(std::string_view piece, std::vector<std::uint32_t>& ids) const;
  std::int64_t char_id(std::uint32_t cp) const;

  StringMap<std::uint32_t> vocab_;
  std::vector<std::string> spelling_;         // [id_end]
  std::vector<bool> has_;                     // [id_end]
  std::vector<std::int32_t> bmp_ids_;  // [0x10000] id of each one-character token, -1: none
  std::unordered_map<std::uint32_t, std::uint32_t> astral_ids_;  // the same above U+FFFF
  std::array<std::int64_t, 256> fallback_ids_{};  // id of "<0xXX>", -1: none
  std::array<std::int64_t, 256> byte_ids_{};      // id of each byte's byte-level character, -1: none
  StringMap<std::uint32_t> by_bytes_;  // raw bytes -> id of byte-level tokens, with ignore_merges
  std::optional<std::uint32_t> unk_id_;
  PairMap merges_;
  bool ignore_merges_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;

  static constexpr std::size_t kCacheMaxEntries = 1 << 16;
  static constexpr std::size_t kCacheMaxPiece = 64;  // longer pieces are not cached
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<std::uint32_t>> cache_;
};

}  // namespace forge::text
