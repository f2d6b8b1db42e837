#include "core/host_heap.h"

#include <mutex>
#if defined(__GLIBC__)
#include <malloc.h>
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

}  // namespace forge
