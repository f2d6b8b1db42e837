// OpenBLAS as forge uses it: single-threaded calls (src/cpu/matmul.cpp
// spreads the blocks over the cores itself), and the name of the kernels it
// runs. A DYNAMIC_ARCH OpenBLAS (Debian's) picks them by CPU when it loads,
// unless OPENBLAS_CORETYPE names others: on a 2-core AMD EPYC with AVX-512 it
// chose its AVX-512 "Cooperlake" kernels (sgemm 2048: 159-185 GFLOP/s), and
// OPENBLAS_CORETYPE=Haswell in the environment gave its AVX2 ones (93-97).
// So `forge info` and the CPU benchmarks say which ran.
#include "cpu/blas_setup.h"

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
