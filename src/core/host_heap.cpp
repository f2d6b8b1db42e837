#include "core/host_heap.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace forge {

void keep_freed_host_memory() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    constexpr int kReuseUpTo = 1 << 30;
    mallopt(M_MMAP_THRESHOLD, kReuseUpTo);
    mallopt(M_TRIM_THRESHOLD, kReuseUpTo);
  });
#endif
}

double host_memory_available() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (f >> key) {
    if (key == "MemAvailable:") {
      f >> kb;
      return kb * 1024;
    }
    f.ignore(1 << 10, '\n');
  }
  return 0;
}

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// Freed blocks of kHugePage bytes and more, by size, for the next block of
// the same size. glibc hands blocks this large back to the kernel or leaves
// them where a differently aligned request cannot reuse them, and every
// fresh page then faults and is zeroed again: a CPU training step of GPT-2
// 124M spent 8-10% of its time zeroing its LM head's logits that way. The
// cache holds at most a quarter of the memory available when it starts (4
// GiB at most) and is emptied before an allocation fails.
class BlockCache {
 public:
  std::byte* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    // The block of this size freed last: its pages are the likeliest to be
    // in the caches and the TLB.
    const auto [first, end] = free_.equal_range(bytes);
    if (first == end) return nullptr;
    const auto it = std::prev(end);
    std::byte* p = it->second;
    free_.erase(it);
    cached_ -= bytes;
    return p;
  }
  // Keeps the block, or frees it when the cache is full.
  void give(std::byte* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!limit_known_) {  // 0 where the available memory is unknown: nothing kept
        limit_ = size_t(std::min<double>(double(size_t(4) << 30), host_memory_available() / 4));
        limit_known_ = true;
      }
      if (cached_ + bytes <= limit_) {
        free_.emplace(bytes, p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }
  void drop() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [bytes, p] : free_) std::free(p);
    free_.clear();
    cached_ = 0;
  }

 private:
  std::mutex mu_;
  std::multimap<size_t, std::byte*> free_;
  size_t cached_ = 0, limit_ = 0;
  bool limit_known_ = false;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: tensors may outlive statics
  return *cache;
}

// Whole huge pages, so that the advice covers every page of the block.
size_t huge_rounded(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

}  // namespace

std::byte* allocate_host_bytes(size_t bytes) {
  keep_freed_host_memory();
  if (bytes >= kHugePage) {
    const size_t rounded = huge_rounded(bytes);
    if (std::byte* p = block_cache().take(rounded)) return p;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kHugePage, rounded));
    if (!p) {
      block_cache().drop();
      p = static_cast<std::byte*>(std::aligned_alloc(kHugePage, rounded));
    }
#if defined(__linux__) && !defined(__EMSCRIPTEN__) && defined(MADV_HUGEPAGE)
    // Advice only: a kernel without transparent huge pages refuses it and
    // the block stays on small pages.
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
  }
  const size_t rounded = (bytes + 63) / 64 * 64;
  return static_cast<std::byte*>(std::aligned_alloc(64, rounded ? rounded : 64));
}

void release_host_bytes(std::byte* p, size_t bytes) {
  if (!p) return;
  if (bytes >= kHugePage) {
    block_cache().give(p, huge_rounded(bytes));
    return;
  }
  std::free(p);
}

}  // namespace forge
