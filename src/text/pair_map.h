// Open-addressing hash map from a pair of token ids to the merge it forms:
// the BPE inner loop looks up every adjacent pair, so this is kept flat.
#pragma once
#include <cstdint>
#include <vector>

namespace forge::text {

struct MergeRule {
  std::uint32_t rank;    // lower merges first
  std::uint32_t merged;  // id of the concatenated token
};

class PairMap {
 public:
  PairMap() = default;
  explicit PairMap(std::size_t expected) {
    std::size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    slots_.assign(cap, Slot{kEmpty, {}});
  }

  // Keeps the first rule inserted for a pair (the lowest rank when inserted in order).
  void insert(std::uint32_t a, std::uint32_t b, MergeRule rule) {
    const std::uint64_t key = pack(a, b);
    for (std::size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == key) return;
      if (slots_[i].key == kEmpty) {
        slots_[i] = Slot{key, rule};
        return;
      }
    }
  }

  const MergeRule* find(std::uint32_t a, std::uint32_t b) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t key = pack(a, b);
    for (std::size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == key) return &slots_[i].rule;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key;
    MergeRule rule;
  };
  static std::uint64_t pack(std::uint32_t a, std::uint32_t b) {
    return (std::uint64_t{a} << 32) | b;
  }
  std::size_t index(std::uint64_t key) const {
    key ^= key >> 29;
    key *= 0xBF58476D1CE4E5B9ull;
    key ^= key >> 32;
    return static_cast<std::size_t>(key) & (slots_.size() - 1);
  }
  std::vector<Slot> slots_;  // size is a power of two, at most half full
};

}  // namespace forge::text
