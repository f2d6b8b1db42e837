// The CPU backend's matrix library: the name of the kernels it runs, and
// products of odd shapes in every layout against sums in double, so that
// whichever kernels run are checked on their edge cases too.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "forge/device.h"
#include "forge/ops.h"
#include "parity/parity.h"
#include "unit/this_build.h"

using forge::Tensor;
using forge::testing::random_tensor;

TEST(CpuBlas, NamesTheKernelsThatRun) {
  const std::string blas = forge::Device::cpu_blas();
#if FORGE_HAVE_OPENBLAS
  ASSERT_EQ(blas.rfind("openblas (", 0), 0u) << blas;
  EXPECT_EQ(blas.find("unknown"), std::string::npos) << blas;
  // OPENBLAS_CORETYPE, when the environment sets it, chose them.
  if (const char* core = std::getenv("OPENBLAS_CORETYPE")) {
    std::string want = core, got = blas;
    for (char& ch : want) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    for (char& ch : got) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_NE(got.find("(" + want + " kernels)"), std::string::npos) << blas << " under OPENBLAS_CORETYPE=" << core;
  }
#else
  EXPECT_EQ(blas, "none (portable loops)");
#endif
}

// OpenBLAS falls back to its SSE3 "Prescott" kernels on a CPU its detection
// does not know (Debian 12's on recent Intel Xeons: 5x slower products).
// forge, with no OPENBLAS_CORETYPE given, then runs again with kernels the
// CPU can run; a user's OPENBLAS_CORETYPE stands, Prescott included.
TEST(CpuBlas, CliNeverRunsGenericKernelsOnAnAvx2Cpu) {
#if FORGE_HAVE_OPENBLAS && defined(__x86_64__)
  auto info = [](const std::string& env) {
    const std::string cmd = "env " + env + " " + std::string(forge::testing::cli_path()) + " info 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (p && std::fgets(buf, sizeof buf, p)) out += buf;
    if (p) pclose(p);
    return out;
  };
  const std::string chosen = info("-u OPENBLAS_CORETYPE");
  ASSERT_NE(chosen.find("blas openblas ("), std::string::npos) << chosen;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    EXPECT_EQ(chosen.find("(Prescott kernels)"), std::string::npos) << chosen;
  const std::string forced = info("OPENBLAS_CORETYPE=Prescott");
  EXPECT_NE(forced.find("(Prescott kernels)"), std::string::npos) << forced;
#else
  GTEST_SKIP() << "no OpenBLAS on x86-64 in this build";
#endif
}

TEST(CpuBlas, OddShapesInEveryLayoutMatchDoubleSums) {
  struct Case {
    int64_t m, k, n;
  };
  for (const Case c : {Case{67, 131, 259}, Case{1, 300, 77}, Case{33, 7, 5}, Case{130, 513, 17}}) {
    for (int layout = 0; layout < 4; ++layout) {
      const bool ta = layout & 1, tb = layout & 2;
      const Tensor a = random_tensor(ta ? forge::Shape{c.k, c.m} : forge::Shape{c.m, c.k}, 1);
      const Tensor b = random_tensor(tb ? forge::Shape{c.n, c.k} : forge::Shape{c.k, c.n}, 2);
      forge::MatmulOptions o;
      o.transpose_a = ta;
      o.transpose_b = tb;
      const std::vector<float> got = forge::matmul(a, b, o).to_vector<float>();
      const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
      ASSERT_EQ(got.size(), size_t(c.m * c.n));
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double s = 0, mag = 0;
          for (int64_t p = 0; p < c.k; ++p) {
            const double x = av[size_t(ta ? p * c.m + i : i * c.k + p)];
            const double y = bv[size_t(tb ? j * c.k + p : p * c.n + j)];
            s += x * y;
            mag += std::abs(x * y);
          }
          // f32 rounding of a sum of k products: within 64 ulps of their magnitudes.
          ASSERT_NEAR(got[size_t(i * c.n + j)], s, 4e-6 * mag + 1e-6)
              << c.m << "x" << c.k << "x" << c.n << " layout " << layout << " at " << i << "," << j;
        }
    }
  }
}
