#include "text/bpe_model.h"

#include <algorithm>
#include <cstdio>

#include "forge/error.h"
#include "text/byte_level.h"

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
    : vocab_(std::move(config.vocab)), ignore_merges_(config.ignore_merges) {
  std::uint32_t end = 0;
  for (const auto& [token, id] : vocab_) end = std::max(end, id + 1);
  spelling_.resize(end);
  has_.assign(end, false);
  byte_ids_.fill(-1);
  for (const auto& [token, id] : vocab_) {
    spelling_[id] = token;
    has_[id] = true;
    const auto bytes = byte_level_to_bytes(token);
    if (bytes && bytes->size() == 1) byte_ids_[static_cast<unsigned char>((*bytes)[0])] = id;
    if (bytes && ignore_merges_) by_bytes_.emplace(*bytes, id);
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

std::uint32_t BpeModel::byte_id(unsigned char b) const {
  if (byte_ids_[b] >= 0) return static_cast<std::uint32_t>(byte_ids_[b]);
  if (unk_id_) return *unk_id_;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", b);
  throw ValueError(std::string("[tokenizer] byte ") + hex +
                   " has no token in the vocab and there is no unk token");
}

void BpeModel::encode_piece(std::string_view piece, std::vector<std::uint32_t>& out,
                            const CacheLease& lease) const {
  if (piece.size() == 1) {
    out.push_back(byte_id(static_cast<unsigned char>(piece[0])));
    return;
  }
  if (ignore_merges_) {
    auto it = by_bytes_.find(piece);
    if (it != by_bytes_.end()) {
      out.push_back(it->second);
      return;
    }
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
  merge(piece, out);
  if (cacheable) {
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(piece), std::vector<std::uint32_t>(out.begin() + first, out.end()));
  }
}

// Merges adjacent symbols, lowest rank first (leftmost among equal ranks),
// using a heap of candidates that are re-checked when popped.
void BpeModel::merge(std::string_view piece, std::vector<std::uint32_t>& out) const {
  const auto n = static_cast<std::int32_t>(piece.size());
  std::vector<std::uint32_t> id(n);  // [n] token of the symbol starting at byte i
  std::vector<std::int32_t> next(n), prev(n);
  std::vector<bool> dead(n, false);
  for (std::int32_t i = 0; i < n; ++i) {
    id[i] = byte_id(static_cast<unsigned char>(piece[i]));
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
