// CPU matmul: OpenBLAS sgemm per batch item when available; otherwise a
// cache-blocked loop (the browser build, and machines without OpenBLAS).
#include <algorithm>
#include <vector>

#include "cpu/kernels.h"
#if FORGE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace forge::cpu {

namespace {

// out[m, n] (row stride ldc) = alpha * op(A) @ op(B), plain loops over
// 64-wide blocks of k.
void gemm_portable(const MatmulPlan& p, int64_t ldc, const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < p.m; ++i) std::fill(c + i * ldc, c + i * ldc + p.n, 0.0f);
  for (int64_t k0 = 0; k0 < p.k; k0 += 64) {
    int64_t k1 = std::min(p.k, k0 + 64);
    for (int64_t i = 0; i < p.m; ++i) {
      float* ci = c + i * ldc;
      for (int64_t kk = k0; kk < k1; ++kk) {
        float av = p.trans_a ? a[kk * p.lda + i] : a[i * p.lda + kk];
        if (p.trans_b) {
          for (int64_t j = 0; j < p.n; ++j) ci[j] += av * b[j * p.ldb + kk];
        } else {
          const float* bk = b + kk * p.ldb;
          for (int64_t j = 0; j < p.n; ++j) ci[j] += av * bk[j];
        }
      }
    }
  }
  if (p.alpha != 1.0f)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) c[i * ldc + j] *= p.alpha;
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& p, Tensor& out) {
  const float* pa = a.data<float>() + p.a_offset;
  const float* pb = b.data<float>();
  float* po = out.data<float>() + p.c_offset;
  const int64_t ldc = p.ldc ? p.ldc : p.n;
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    const float* ab = pa + bi * p.a_batch_stride;
    const float* bb = pb + bi * p.b_batch_stride;
    float* cb = po + bi * p.m * ldc;
    if (p.m == 0 || p.n == 0) continue;
    if (p.k == 0) {
      for (int64_t i = 0; i < p.m; ++i) std::fill(cb + i * ldc, cb + i * ldc + p.n, 0.0f);
    } else {
#if FORGE_HAVE_OPENBLAS
      cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans, p.trans_b ? CblasTrans : CblasNoTrans,
                  int(p.m), int(p.n), int(p.k), p.alpha, ab, int(p.lda), bb, int(p.ldb), 0.0f, cb, int(ldc));
#else
      gemm_portable(p, ldc, ab, bb, cb);
#endif
    }
    if (bias) {
      const float* pbias = bias->data<float>();
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) cb[i * ldc + j] += pbias[j];
    }
  }
}

}  // namespace forge::cpu
