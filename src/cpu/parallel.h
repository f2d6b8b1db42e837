// parallel_for: the CPU kernels' one way onto several cores. [0, n) is cut
// into one contiguous range per OpenMP thread; every item is computed by the
// same code whatever range holds it, so results do not depend on the thread
// count. Small jobs stay on the calling thread (waking the team costs a few
// microseconds).
#pragma once
#include <cstdint>

#if FORGE_HAVE_OPENMP
#include <omp.h>
#endif

namespace forge::cpu {

// Below this much work (items x cost_per_item, in element operations) a job
// runs serially.
inline constexpr int64_t kParallelMinWork = int64_t(1) << 15;

// Calls f(lo, hi) on disjoint ranges covering [0, n).
template <class F>
void parallel_for(int64_t n, int64_t cost_per_item, F&& f) {
#if FORGE_HAVE_OPENMP
  if (n > 1 && n * cost_per_item >= kParallelMinWork && omp_get_max_threads() > 1 && !omp_in_parallel()) {
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
      if (lo < hi) f(lo, hi);
    }
    return;
  }
#endif
  if (n > 0) f(int64_t(0), n);
}

}  // namespace forge::cpu
