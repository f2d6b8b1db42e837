// OpenBLAS's setup for forge's CPU products (src/cpu/blas_setup.cpp).
#pragma once
#include <string>

namespace forge::cpu {

// Before the first BLAS call of forge's: OpenBLAS computes on the calling
// thread only (forge spreads the blocks over the cores itself). Idempotent,
// thread-safe; a no-op without OpenBLAS.
void prepare_blas();

// The kernels to ask OpenBLAS for (OPENBLAS_CORETYPE) when it fell back to
// its generic SSE3 "Prescott" ones on a CPU its detection does not know (as
// Debian 12's 0.3.21 does on Intel Xeons after Sapphire Rapids: sgemm 2048
// at 59 GFLOP/s there, 313 with its Cooperlake kernels) and the environment
// names none: "Cooperlake" (AVX-512 with bf16), "SkylakeX" (AVX-512) or
// "Haswell" (AVX2 and FMA). Empty when OpenBLAS chose for itself, the user
// chose, or the CPU has none of these. OpenBLAS reads the variable once,
// when it loads, so a program acts on it by restarting itself
// (restart_with_blas_kernels).
std::string blas_kernels_to_request();

// If blas_kernels_to_request() names kernels: sets OPENBLAS_CORETYPE and
// replaces the process with a fresh run of the same program and arguments
// (execv of /proc/self/exe; the variable then stops a second restart).
// Returns when there is nothing to do or the restart fails.
void restart_with_blas_kernels(char** argv);

}  // namespace forge::cpu
