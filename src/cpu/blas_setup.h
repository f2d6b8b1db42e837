// OpenBLAS's setup for forge's CPU products (src/cpu/blas_setup.cpp).
#pragma once

namespace forge::cpu {

// Before the first BLAS call of forge's: OpenBLAS computes on the calling
// thread only (forge spreads the blocks over the cores itself). Idempotent,
// thread-safe; a no-op without OpenBLAS.
void prepare_blas();

}  // namespace forge::cpu
