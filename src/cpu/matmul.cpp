// CPU matmul: OpenBLAS sgemm when available; otherwise a cache-blocked loop
// (the browser build, and machines without OpenBLAS). The work is spread
// over the cores here, by batch items or by row / column blocks of C, each
// block one single-threaded sgemm: OpenBLAS's own threads would spin between
// calls and take the cores from the other kernels' threads.
#include <algorithm>
#include <vector>

#include "cpu/blas_setup.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#if FORGE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace forge::cpu {

namespace {

// Rows or columns of C per parallel item: whole register tiles of the
// sgemm kernels, large enough that a block's packing stays cheap.
constexpr int64_t kBlock = 64;

// One block of one batch item: operands A, B and C point at the item, and
// C's rows [m0, m1) x columns [n0, n1) are computed.
struct Block {
  int64_t m0, m1, n0, n1;
};

#if !FORGE_HAVE_OPENBLAS
// C block = alpha * op(A) @ op(B), plain loops over 64-wide blocks of k.
void gemm_portable(const MatmulPlan& p, int64_t ldc, const float* a, const float* b, float* c, Block blk) {
  for (int64_t i = blk.m0; i < blk.m1; ++i) std::fill(c + i * ldc + blk.n0, c + i * ldc + blk.n1, 0.0f);
  for (int64_t k0 = 0; k0 < p.k; k0 += 64) {
    int64_t k1 = std::min(p.k, k0 + 64);
    for (int64_t i = blk.m0; i < blk.m1; ++i) {
      float* ci = c + i * ldc;
      for (int64_t kk = k0; kk < k1; ++kk) {
        float av = p.trans_a ? a[kk * p.lda + i] : a[i * p.lda + kk];
        if (p.trans_b) {
          for (int64_t j = blk.n0; j < blk.n1; ++j) ci[j] += av * b[j * p.ldb + kk];
        } else {
          const float* bk = b + kk * p.ldb;
          for (int64_t j = blk.n0; j < blk.n1; ++j) ci[j] += av * bk[j];
        }
      }
    }
  }
  if (p.alpha != 1.0f)
    for (int64_t i = blk.m0; i < blk.m1; ++i)
      for (int64_t j = blk.n0; j < blk.n1; ++j) c[i * ldc + j] *= p.alpha;
}
#endif

void gemm_block(const MatmulPlan& p, int64_t ldc, const float* a, const float* b, const float* bias, float* c,
                Block blk) {
  const int64_t m = blk.m1 - blk.m0, n = blk.n1 - blk.n0;
  if (m <= 0 || n <= 0) return;
  if (p.k == 0) {
    for (int64_t i = blk.m0; i < blk.m1; ++i) std::fill(c + i * ldc + blk.n0, c + i * ldc + blk.n1, 0.0f);
  } else {
#if FORGE_HAVE_OPENBLAS
    // The block's first row of op(A) and first column of op(B).
    const float* ab = a + (p.trans_a ? blk.m0 : blk.m0 * p.lda);
    const float* bb = b + (p.trans_b ? blk.n0 * p.ldb : blk.n0);
    float* cb = c + blk.m0 * ldc + blk.n0;
    if (m == 1) {
      // One row (decode): sgemv streams op(B) once; sgemm would first pack it.
      // Zeroed first: sgemv's beta = 0 scales y, which would keep a NaN left
      // in reused memory.
      const int inc_a = p.trans_a ? int(p.lda) : 1;
      std::fill(cb, cb + n, 0.0f);
      if (p.trans_b)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, int(n), int(p.k), p.alpha, bb, int(p.ldb), ab, inc_a, 0.0f, cb, 1);
      else
        cblas_sgemv(CblasRowMajor, CblasTrans, int(p.k), int(n), p.alpha, bb, int(p.ldb), ab, inc_a, 0.0f, cb, 1);
    } else {
      cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans, p.trans_b ? CblasTrans : CblasNoTrans, int(m),
                  int(n), int(p.k), p.alpha, ab, int(p.lda), bb, int(p.ldb), 0.0f, cb, int(ldc));
    }
#else
    gemm_portable(p, ldc, a, b, c, blk);
#endif
  }
  if (bias)
    for (int64_t i = blk.m0; i < blk.m1; ++i)
      for (int64_t j = blk.n0; j < blk.n1; ++j) c[i * ldc + j] += bias[j];
}

// One row of A against B stored [k, n] (a decode step through GPT-2's Conv1D
// weights): B is cut into slices of whole rows, each thread takes a
// contiguous run of slices, so that it streams one contiguous range of
// memory, and the slices' partial rows are added in slice order. Cutting
// the columns instead has every thread stride through every row of B: on a
// 2-core EPYC, GPT-2 124M's 48 Conv1D matrices and LM head took 15.3-18.0 ms
// a token that way and 11.9-12.3 ms by slices. Slices have a fixed number
// of rows, so the sum's order does not depend on the thread count.
constexpr int64_t kSliceRows = 128;

bool row_by_k_slices(const MatmulPlan& p) { return p.m == 1 && !p.trans_b && p.k >= 2 * kSliceRows; }

void row_times_kn(const MatmulPlan& p, const float* a, const float* b, const float* bias, float* c) {
  const int64_t slices = (p.k + kSliceRows - 1) / kSliceRows;
  std::vector<float> part(size_t(slices * p.n));
  parallel_for(slices, kSliceRows * p.n, [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) {
      MatmulPlan q = p;
      q.k = std::min(kSliceRows, p.k - s * kSliceRows);
      const float* as = a + (p.trans_a ? s * kSliceRows * p.lda : s * kSliceRows);
      gemm_block(q, p.n, as, b + s * kSliceRows * p.ldb, nullptr, part.data() + s * p.n, {0, 1, 0, p.n});
    }
  });
  for (int64_t j = 0; j < p.n; ++j) {
    float v = 0.0f;
    for (int64_t s = 0; s < slices; ++s) v += part[size_t(s * p.n + j)];
    c[j] = bias ? v + bias[j] : v;
  }
}

}  // namespace

void gemm_on_thread(const MatmulPlan& p, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  prepare_blas();
  if (!accumulate) return gemm_block(p, ldc, a, b, nullptr, c, {0, p.m, 0, p.n});
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return;
#if FORGE_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans, p.trans_b ? CblasTrans : CblasNoTrans, int(p.m),
              int(p.n), int(p.k), p.alpha, a, int(p.lda), b, int(p.ldb), 1.0f, c, int(ldc));
#else
  std::vector<float> product(size_t(p.m * p.n));
  gemm_block(p, p.n, a, b, nullptr, product.data(), {0, p.m, 0, p.n});
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) c[i * ldc + j] += product[size_t(i * p.n + j)];
#endif
}

void gemm_nt_block(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int64_t ldc) {
  MatmulPlan p;
  p.m = m, p.n = n, p.k = k, p.trans_b = true, p.lda = k, p.ldb = k;
  gemm_on_thread(p, a, b, c, ldc, false);
}

namespace {

// op(A) of plan p (its batch items, or one where A is broadcast) as dense
// [m, k] items with the side of the diagonal that p.a_triangle leaves out
// zeroed, and p changed to read them: BLAS has no batched triangular
// product, and the copy costs m * k against the product's m * n * k.
std::vector<float> dense_triangle(const float* a, MatmulPlan& p) {
  const int64_t items = p.a_batch_stride ? p.batch : 1;
  std::vector<float> dense(size_t(items * p.m * p.k), 0.0f);
  for (int64_t bi = 0; bi < items; ++bi) {
    const float* src = a + bi * p.a_batch_stride;
    float* dst = dense.data() + bi * p.m * p.k;
    for (int64_t i = 0; i < p.m; ++i) {
      const int64_t lo = p.a_triangle == Triangle::Upper ? std::min(i, p.k) : 0;
      const int64_t hi = p.a_triangle == Triangle::Lower ? std::min(i + 1, p.k) : p.k;
      for (int64_t j = lo; j < hi; ++j) dst[i * p.k + j] = p.trans_a ? src[j * p.lda + i] : src[i * p.lda + j];
    }
  }
  p.trans_a = false;
  p.lda = p.k;
  p.a_offset = 0;
  p.a_batch_stride = p.a_batch_stride ? p.m * p.k : 0;
  p.a_triangle = Triangle::Full;
  return dense;
}

// Writes zero over the side of each [m, n] item of C that p.c_triangle leaves out.
void zero_outside_triangle(const MatmulPlan& p, float* c) {
  const int64_t ldc = p.ldc ? p.ldc : p.n;
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t i = 0; i < p.m; ++i) {
      float* row = c + (bi * p.m + i) * ldc;
      if (p.c_triangle == Triangle::Lower) std::fill(row + std::min(i + 1, p.n), row + p.n, 0.0f);
      else std::fill(row, row + std::min(i, p.n), 0.0f);
    }
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out) {
  if (plan.c_triangle != Triangle::Full) {
    // The whole product, then the other side zeroed (BLAS has no
    // triangle-only product over a general A and B).
    MatmulPlan whole = plan;
    whole.c_triangle = Triangle::Full;
    matmul(a, b, bias, whole, out);
    zero_outside_triangle(plan, out.data<float>() + plan.c_offset);
    return;
  }
  if (b.dtype() == DType::BF16) return matmul_bf16(a, b, bias, plan, out);
  prepare_blas();
  MatmulPlan p = plan;
  std::vector<float> triangle;
  const float* pa = a.data<float>() + p.a_offset;
  if (p.a_triangle != Triangle::Full) {
    triangle = dense_triangle(pa, p);
    pa = triangle.data();
  }
  const float* pb = b.data<float>();
  const float* pbias = bias ? bias->data<float>() : nullptr;
  float* po = out.data<float>() + p.c_offset;
  const int64_t ldc = p.ldc ? p.ldc : p.n;
  auto item = [&](int64_t bi, Block blk) {
    gemm_block(p, ldc, pa + bi * p.a_batch_stride, pb + bi * p.b_batch_stride, pbias, po + bi * p.m * ldc, blk);
  };
  const int64_t flops = p.m * p.n * std::max<int64_t>(p.k, 1);
  if (p.batch > 1) {
    parallel_for(p.batch, flops, [&](int64_t lo, int64_t hi) {
      for (int64_t bi = lo; bi < hi; ++bi) item(bi, {0, p.m, 0, p.n});
    });
    return;
  }
  if (row_by_k_slices(p)) return row_times_kn(p, pa, pb, pbias, po);
  // One item: split the longer side of C, so that the shorter operand is
  // the one each block packs again.
  const bool by_rows = p.m > p.n;
  const int64_t side = by_rows ? p.m : p.n, blocks = (side + kBlock - 1) / kBlock;
  parallel_for(blocks, flops / std::max<int64_t>(blocks, 1), [&](int64_t lo, int64_t hi) {
    const int64_t s0 = lo * kBlock, s1 = std::min(side, hi * kBlock);
    item(0, by_rows ? Block{s0, s1, 0, p.n} : Block{0, p.m, s0, s1});
  });
}

}  // namespace forge::cpu
