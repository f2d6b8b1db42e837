#include "text/bpe_model.h"

#include <algorithm>
#include <cstdio>

#include "forge/error.h"
#include "text/byte_level.h"
#include "text/utf8.h"

namespace forge::text {

namespace {

std::uint32_t lookup(const StringMap<std::uint32_t>& vocab, const std::string& token,
                     const std::string& source, std::size_t rank) {
  auto it = vocab.find(token);
  if (it == vocab.end()) {
    throw IoError("[tokenizer] " + source + ": merge " + std::to_string(rank) +
                  " names token '" + token + "' which is not in the vocab");
  }
  return it->second;
}

// A candidate merge of the symbol at `pos` with its right neighbour.
struct Candidate {
  std::uint32_t rank;
  std::int32_t pos;
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

BpeModel::BpeModel(BpeConfig config, const std::string& source)
    : vocab_(std::move(config.vocab)),
      ignore_merges_(config.ignore_merges),
      byte_fallback_(config.byte_fallback),
      fuse_unk_(config.fuse_unk) {
  std::uint32_t end = 0;
  for (const auto& [token, id] : vocab_) end = std::max(end, id + 1);
  spelling_.resize(end);
  has_.assign(end, false);
  bmp_ids_.assign(0x10000, -1);
  fallback_ids_.fill(-1);
  for (const auto& [token, id] : vocab_) {
    spelling_[id] = token;
    has_[id] = true;
    if (token.empty()) continue;
    const Utf8Step step = utf8_next(token, 0);
    if (step.len == token.size() && step.cp != kInvalidCodePoint) {
      if (step.cp < 0x10000) {
        bmp_ids_[step.cp] = static_cast<std::int32_t>(id);
      } else {
        astral_ids_[step.cp] = id;
      }
    }
  }
  if (byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      if (auto it = vocab_.find(std::string_view(name)); it != vocab_.end())
        fallback_ids_[b] = it->second;
    }
  }
  for (int b = 0; b < 256; ++b) byte_ids_[b] = char_id(byte_to_char(static_cast<std::uint8_t>(b)));
  if (ignore_merges_) {
    for (const auto& [token, id] : vocab_) {
      if (auto raw = byte_level_to_bytes(token)) by_bytes_.emplace(std::move(*raw), id);
    }
  }
  if (config.unk_token) {
    auto it = vocab_.find(*config.unk_token);
    if (it == vocab_.end()) {
      throw IoError("[tokenizer] " + source + ": unk token '" + *config.unk_token +
                    "' is not in the vocab");
    }
    unk_id_ = it->second;
  }
  merges_ = PairMap(config.merges.size());
  for (std::size_t rank = 0; rank < config.merges.size(); ++rank) {
    const auto& [a, b] = config.merges[rank];
    const std::uint32_t ia = lookup(vocab_, a, source, rank);
    const std::uint32_t ib = lookup(vocab_, b, source, rank);
    const std::uint32_t merged = lookup(vocab_, a + b, source, rank);
    merges_.insert(ia, ib, MergeRule{static_cast<std::uint32_t>(rank), merged});
  }
}

std::int64_t BpeModel::char_id(std::uint32_t cp) const {
  if (cp < 0x10000) return bmp_ids_[cp];
  auto it = astral_ids_.find(cp);
  return it == astral_ids_.end() ? std::int64_t{-1} : std::int64_t{it->second};
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<std::uint32_t>& ids) const {
  bool unk_pending = false;  // an unk not yet appended (fuse_unk may extend it)
  for (std::size_t i = 0; i < piece.size();) {
    const Utf8Step step = utf8_next(piece, i);
    const std::int64_t id = step.cp == kInvalidCodePoint ? -1 : char_id(step.cp);
    const std::string_view ch = piece.substr(i, step.len);
    i += step.len;
    if (id >= 0) {
      if (unk_pending) ids.push_back(*unk_id_);
      unk_pending = false;
      ids.push_back(static_cast<std::uint32_t>(id));
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : ch) all = all && fallback_ids_[b] >= 0;
      if (all) {
        // Hugging Face appends these before a pending unk: kept for identical ids.
        for (unsigned char b : ch) ids.push_back(static_cast<std::uint32_t>(fallback_ids_[b]));
        continue;
      }
    }
    if (!unk_id_) {
      std::string hex;
      for (unsigned char b : ch) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "%s0x%02X", hex.empty() ? "" : " ", b);
        hex += buf;
      }
      throw ValueError("[tokenizer] character " + hex +
                       " has no token in the vocab and there is no unk token");
    }
    if (unk_pending && !fuse_unk_) ids.push_back(*unk_id_);
    unk_pending = true;
  }
  if (unk_pending) ids.push_back(*unk_id_);
}

void BpeModel::byte_symbols(std::string_view piece, std::vector<std::uint32_t>& ids) const {
  for (unsigned char b : piece) {
    if (byte_ids_[b] < 0) {
      // A byte-level character missing from the vocab: the general rules (unk, fallback).
      initial_symbols(bytes_to_byte_level(piece), ids);
      return;
    }
  }
  for (unsigned char b : piece) ids.push_back(static_cast<std::uint32_t>(byte_ids_[b]));
}

void BpeModel::encode_piece(std::string_view piece, bool raw_bytes,
                            std::vector<std::uint32_t>& out, const CacheLease& lease) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const auto& whole = raw_bytes ? by_bytes_ : vocab_;
    auto it = whole.find(piece);
    if (it != whole.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (raw_bytes ? piece.size() == 1 : utf8_next(piece, 0).len == piece.size()) {
    if (raw_bytes) {
      byte_symbols(piece, out);
    } else {
      initial_symbols(piece, out);
    }
    return;
  }
  const bool cacheable = lease.held() && piece.size() <= kCacheMaxPiece;
  if (cacheable) {
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t first = out.size();
  merge(piece, raw_bytes, out);
  if (cacheable) {
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(piece), std::vector<std::uint32_t>(out.begin() + first, out.end()));
  }
}

// Merges adjacent symbols, lowest rank first (leftmost among equal ranks),
// using a heap of candidates that are re-checked when popped.
void BpeModel::merge(std::string_view piece, bool raw_bytes,
                     std::vector<std::uint32_t>& out) const {
  std::vector<std::uint32_t> id;  // [n] token of symbol i
  id.reserve(piece.size());
  if (raw_bytes) {
    byte_symbols(piece, id);
  } else {
    initial_symbols(piece, id);
  }
  const auto n = static_cast<std::int32_t>(id.size());
  if (n == 0) return;
  std::vector<std::int32_t> next(n), prev(n);
  std::vector<bool> dead(n, false);
  for (std::int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::vector<Candidate> heap;
  heap.reserve(n);
  auto push = [&](std::int32_t p) {
    const std::int32_t q = next[p];
    if (q < 0) return;
    if (const MergeRule* m = merges_.find(id[p], id[q])) {
      heap.push_back({m->rank, p});
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    }
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const Candidate c = heap.back();
    heap.pop_back();
    const std::int32_t p = c.pos;
    const std::int32_t q = next[p];
    if (dead[p] || q < 0) continue;
    const MergeRule* m = merges_.find(id[p], id[q]);
    if (!m || m->rank != c.rank) continue;  // stale: a neighbour merged since
    id[p] = m->merged;
    dead[q] = true;
    next[p] = next[q];
    if (next[q] >= 0) prev[next[q]] = p;
    if (prev[p] >= 0) push(prev[p]);
    push(p);
  }
  for (std::int32_t i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

}  // namespace forge::text
