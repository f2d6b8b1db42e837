// The test binary's entry point: like the forge CLI it first makes sure that
// OpenBLAS runs the kernels this CPU can run (cpu/blas_setup.h), so the CPU
// tests exercise the products users get, then runs GoogleTest.
#include <gtest/gtest.h>

#include "cpu/blas_setup.h"

int main(int argc, char** argv) {
  forge::cpu::restart_with_blas_kernels(argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
