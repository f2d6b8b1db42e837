#include "core/host_heap.h"

#include <cstdlib>
#include <fstream>
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

std::byte* allocate_host_bytes(size_t bytes) {
  keep_freed_host_memory();
#if defined(__linux__) && !defined(__EMSCRIPTEN__) && defined(MADV_HUGEPAGE)
  constexpr size_t kHugePage = size_t(2) << 20;
  if (bytes >= kHugePage) {
    // Whole huge pages, so that the advice covers every page of the block.
    const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kHugePage, rounded));
    // Advice only: a kernel without transparent huge pages refuses it and
    // the block stays on small pages.
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
    return p;
  }
#endif
  const size_t rounded = (bytes + 63) / 64 * 64;
  return static_cast<std::byte*>(std::aligned_alloc(64, rounded ? rounded : 64));
}

}  // namespace forge
