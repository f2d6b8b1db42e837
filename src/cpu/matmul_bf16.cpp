// CPU products against a bf16 B (a dense weight kept in 16 bits). Few rows
// (decode) read B's 16-bit values directly, widening each by a shift, so a
// step streams half the bytes of f32; many rows widen B once and take the f32
// matmul, whose blocking reuses each weight across rows. Portable C++: the
// widening and the 16-lane partial sums vectorize for the ISA the clone is
// built for (AVX-512 VCVTNE/DPBF16 instructions would round the activations
// to bf16, which the products here do not).
#include <bit>
#include <cstring>

#include "cpu/isa_clones.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

namespace {

// Rows up to which each output is a dot product over a widened row of B.
constexpr int64_t kDotRows = 16;
// Columns of C per parallel item.
constexpr int64_t kColBlock = 16;
constexpr int kLanes = 16;

inline float widen(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// x [k] . widen(w [k]) in f32, as 16 partial sums added in a fixed order.
FORGE_ISA_CLONES
float dot_bf16(const float* x, const uint16_t* w, int64_t k) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * widen(w[i + l]);
  float s = 0.0f;
  for (; i < k; ++i) s += x[i] * widen(w[i]);
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

FORGE_ISA_CLONES
void widen_range(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = widen(src[i]);
}

}  // namespace

void widen_bf16(const Tensor& x, Tensor& out) {
  const auto* src = static_cast<const uint16_t*>(x.raw_data());
  float* dst = out.data<float>();
  parallel_for(x.numel(), 1, [&](int64_t lo, int64_t hi) { widen_range(src + lo, dst + lo, hi - lo); });
}

void matmul_bf16(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& p, Tensor& out) {
  if (p.m > kDotRows || !p.trans_b || p.trans_a || p.batch > 1 || p.a_triangle != Triangle::Full) {
    Tensor wide = Tensor::empty(b.shape(), DType::F32, b.device());
    widen_bf16(b, wide);
    matmul(a, wide, bias, p, out);
    return;
  }
  // C [m, n] = alpha * A [m, k] @ B [n, k]^T (+ bias): every row of A against
  // one block of B's rows at a time, so each row of B is read from memory once.
  const float* pa = a.data<float>() + p.a_offset;
  const auto* pb = static_cast<const uint16_t*>(b.raw_data());
  const float* pbias = bias ? bias->data<float>() : nullptr;
  float* pc = out.data<float>() + p.c_offset;
  const int64_t ldc = p.ldc ? p.ldc : p.n, blocks = (p.n + kColBlock - 1) / kColBlock;
  parallel_for(blocks, kColBlock * p.m * std::max<int64_t>(p.k, 1), [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo * kColBlock; j < std::min(p.n, hi * kColBlock); ++j)
      for (int64_t i = 0; i < p.m; ++i) {
        const float v = p.alpha * dot_bf16(pa + i * p.lda, pb + j * p.ldb, p.k);
        pc[i * ldc + j] = pbias ? v + pbias[j] : v;
      }
  });
}

}  // namespace forge::cpu
