// OpenBLAS as forge uses it: single-threaded calls (src/cpu/matmul.cpp
// spreads the blocks over the cores itself), and the name of the kernels it
// runs. A DYNAMIC_ARCH OpenBLAS (Debian's) picks them by CPU when it loads,
// unless OPENBLAS_CORETYPE names others: on a 2-core AMD EPYC with AVX-512 it
// chose its AVX-512 "Cooperlake" kernels (sgemm 2048: 159-185 GFLOP/s), and
// OPENBLAS_CORETYPE=Haswell in the environment gave its AVX2 ones (93-97).
// So `forge info` and the CPU benchmarks say which ran. On a CPU that its
// detection does not know it falls back to SSE3 kernels, and forge's
// programs restart themselves once with the kernels the CPU can run.
#include "cpu/blas_setup.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "forge/device.h"
#if FORGE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace forge::cpu {

void prepare_blas() {
#if FORGE_HAVE_OPENBLAS
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
#endif
}

std::string blas_kernels_to_request() {
#if FORGE_HAVE_OPENBLAS && defined(__x86_64__)
  if (std::getenv("OPENBLAS_CORETYPE")) return {};  // the user's choice (or a restart's)
  const char* core = openblas_get_corename();
  if (!core || std::strcmp(core, "Prescott") != 0) return {};
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return {};
}

void restart_with_blas_kernels(char** argv) {
  const std::string core = blas_kernels_to_request();
  if (core.empty() || !argv || !argv[0]) return;
  if (::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // No /proc, or exec refused: go on with the kernels loaded.
}

}  // namespace forge::cpu

namespace forge {

std::string Device::cpu_blas() {
#if FORGE_HAVE_OPENBLAS
  const char* core = openblas_get_corename();
  return std::string("openblas (") + (core ? core : "unknown") + " kernels)";
#else
  return "none (portable loops)";
#endif
}

}  // namespace forge
