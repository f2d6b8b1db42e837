// The decode path of the CPU quantized matmul on AVX-512 VNNI. Per group g
// of a row o of W,
//   w . x = s[o, g] * (q . x) + b[o, g] * sum(x[g]),   q unsigned Bits-bit,
// and q . x is computed in integers: x is quantized per group, once per
// call, to xi = round(x / d[g]) with |xi| <= kXMax (24 bits, as fine as an
// f32 mantissa), stored as three signed bytes xi = (t * 256 + u) * 256 + v,
// so that q . xi is three u8 x s8 byte dot products, exact in i32, that
// vpdpbusd does 64 at a time. The result differs from the float path
// (quant.cpp) by the rounding of x to xi: about 3e-8 of the largest |x| of a
// group per element, within the f32 rounding of the sum.
#include "cpu/quant_decode.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cpu/parallel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

// The functions that use AVX-512 VNNI, compiled for it whatever the build's
// -march (have_vnni checks the CPU before any runs).
#define FORGE_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

namespace forge::cpu {

namespace {

constexpr int32_t kXMax = 127 * 65536;  // |xi| <= kXMax: the top byte t stays in [-127, 127]
constexpr int kChunk = 64;              // bytes of a packed row per step (one zmm)
constexpr int kLanes = 16;
constexpr int kPrefetch = 1024;              // i32 lanes of a chunk: lane l sums its bytes 4l..4l+3

// x quantized for every row of W: per row r of x,
//   planes [chunks][phases][3][64]: the bytes t, u, v of xi in the order
//     the weights of a chunk unpack (phase j of byte k is weight P * k + j
//     of the chunk, P = 8 / Bits), zero past `in`;
//   step [groups + kLanes]: d per group (zero padded: kernels read a whole
//     vector of steps at the last groups);
//   xsum [groups + kLanes]: sum(x[g]) (summed in double), zero padded.
struct Acts {
  int64_t chunks = 0, plane_len = 0, step_len = 0;
  std::vector<int8_t> planes;
  std::vector<float> step;
  std::vector<float> xsum;
};

// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_*
// idiom) once these intrinsics are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Per row r of x, per group: amax and sum(x[g]) (in double, 8 lanes), then
// xi = round(x / d[g]) clamped to kXMax (the scalar nearbyint, 16 at a
// time), then xi split into its bytes t, u, v in the planes' order (phase j
// of byte k of chunk c is element P * (c * 64 + k) + j, gathered where P > 1).
FORGE_VNNI_TARGET Acts quantize_acts(const float* x, int64_t m, const QuantPlan& p) {
  Acts a;
  const int P = 8 / p.bits;
  const int64_t row_bytes = p.words * 4;
  a.chunks = (row_bytes + kChunk - 1) / kChunk;
  a.plane_len = a.chunks * P * 3 * kChunk;
  a.step_len = p.groups + kLanes;
  a.planes.assign(size_t(m * a.plane_len), 0);
  a.step.assign(size_t(m * a.step_len), 0.0f);
  a.xsum.assign(size_t(m * a.step_len), 0.0f);
  std::vector<int32_t> xi(size_t(p.in));
  const __m512 lim = _mm512_set1_ps(float(kXMax));
  const __m512i k128 = _mm512_set1_epi32(128), k255 = _mm512_set1_epi32(255);
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * p.in;
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = xr + g * p.group_size;
      __m512 vmax = _mm512_setzero_ps();
      __m512d s0 = _mm512_setzero_pd(), s1 = s0;
      __mmask16 nan = 0;
      for (int64_t i = 0; i < p.group_size; i += kLanes) {
        const __m512 v = _mm512_loadu_ps(xg + i);
        vmax = _mm512_max_ps(vmax, _mm512_abs_ps(v));
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
      }
      // max_ps drops a NaN operand: a NaN anywhere in the group makes amax NaN.
      const float amax = nan ? NAN : _mm512_reduce_max_ps(vmax);
      a.xsum[size_t(r * a.step_len + g)] = float(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)));
      int32_t* qg = xi.data() + g * p.group_size;
      if (!(amax > 0) || !std::isfinite(amax)) {
        // Zeros give zero; inf or NaN give a NaN step, so y is NaN as on the dense path.
        std::fill(qg, qg + p.group_size, 0);
        a.step[size_t(r * a.step_len + g)] = amax > 0 || std::isnan(amax) ? NAN : 0.0f;
        continue;
      }
      const __m512 inv = _mm512_set1_ps(float(kXMax) / amax);
      a.step[size_t(r * a.step_len + g)] = amax / float(kXMax);
      for (int64_t i = 0; i < p.group_size; i += kLanes) {
        const __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(xg + i), inv),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m512 c = _mm512_min_ps(_mm512_max_ps(q, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
        _mm512_storeu_si512(qg + i, _mm512_cvtps_epi32(c));
      }
    }
    int8_t* planes = a.planes.data() + r * a.plane_len;
    for (int64_t c = 0; c < a.chunks; ++c)
      for (int j = 0; j < P; ++j)
        for (int k = 0; k < kChunk; k += kLanes) {
          // Elements P * (c * 64 + k + l) + j of xi, zero past `in`.
          const __m512i idx = _mm512_add_epi32(
              _mm512_mullo_epi32(_mm512_add_epi32(_mm512_set1_epi32(int32_t(c * kChunk + k)),
                                                  _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
                                 _mm512_set1_epi32(P)),
              _mm512_set1_epi32(j));
          const __mmask16 in = _mm512_cmplt_epi32_mask(idx, _mm512_set1_epi32(int32_t(p.in)));
          const __m512i v = P == 1 ? _mm512_maskz_loadu_epi32(in, xi.data() + c * kChunk + k)
                                   : _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in, idx, xi.data(), 4);
          // v = (t * 256 + u) * 256 + lo, each byte signed (exact shifts: the differences are multiples of 256).
          const __m512i lo = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v, k128), k255), k128);
          const __m512i rest = _mm512_srai_epi32(_mm512_sub_epi32(v, lo), 8);
          const __m512i u = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(rest, k128), k255), k128);
          const __m512i t = _mm512_srai_epi32(_mm512_sub_epi32(rest, u), 8);
          int8_t* dst = planes + (c * P + j) * 3 * kChunk + k;
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(t));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + kChunk), _mm512_cvtepi32_epi8(u));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * kChunk), _mm512_cvtepi32_epi8(lo));
        }
  }
  return a;
}

// The sum of the 16 lanes, by halving.
FORGE_VNNI_TARGET inline float hsum(__m512 v) {
  const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

// Row o of W (its packed bytes, row_bytes of them) against one quantized
// row of x (planes): sum over the 16 i32 lanes of a chunk (lane l holds
// bytes 4l..4l+3) of T * 65536 + (U * 256 + V), the lanes' sums against the
// t, u, v planes, times s[g] * d[g] (sd[g], zero padded) of the lane's
// group; L = lanes per group (group_size * Bits / 32).
template <int Bits>
FORGE_VNNI_TARGET float row_dot(const uint8_t* row, int64_t row_bytes, const int8_t* planes, const float* sd, int L,
                                int64_t chunks) {
  constexpr int P = 8 / Bits;
  const __m512i mask = _mm512_set1_epi8(char((1u << Bits) - 1u));
  alignas(64) int32_t idx_lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) idx_lanes[l] = l / L;
  const __m512i idx = _mm512_load_si512(idx_lanes);
  const int log2_l = __builtin_ctz(unsigned(L));  // L is a power of two: no division per chunk
  const __m512 k65536 = _mm512_set1_ps(65536.0f);
  __m512 acc = _mm512_setzero_ps();
  const int64_t full = row_bytes / kChunk;
  for (int64_t c = 0; c < chunks; ++c) {
    // Rows stream from memory one after another: asking for the bytes
    // kPrefetch ahead (into the next rows) keeps more loads in flight than
    // the hardware prefetcher alone (about 10% more GB/s on one core).
    _mm_prefetch(reinterpret_cast<const char*>(row + c * kChunk + kPrefetch), _MM_HINT_T0);
    const __m512i w = c < full
                          ? _mm512_loadu_si512(row + c * kChunk)
                          : _mm512_maskz_loadu_epi8((~0ull) >> (kChunk - (row_bytes - c * kChunk)), row + c * kChunk);
    __m512i t = _mm512_setzero_si512(), u = t, v = t;
    for (int j = 0; j < P; ++j) {
      const __m512i q = Bits == 8 ? w : _mm512_and_si512(_mm512_srli_epi16(w, Bits * j), mask);
      const int8_t* x = planes + ((c * P + j) * 3) * kChunk;
      t = _mm512_dpbusd_epi32(t, q, _mm512_loadu_si512(x));
      u = _mm512_dpbusd_epi32(u, q, _mm512_loadu_si512(x + kChunk));
      v = _mm512_dpbusd_epi32(v, q, _mm512_loadu_si512(x + 2 * kChunk));
    }
    const __m512i r = _mm512_add_epi32(_mm512_slli_epi32(u, 8), v);  // exact: |r| < 2^26
    const __m512 val = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(t), k65536), _mm512_cvtepi32_ps(r));
    const __m512 sdv = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(sd + ((c * kLanes) >> log2_l)));
    acc = _mm512_add_ps(acc, _mm512_mul_ps(val, sdv));
  }
  return hsum(acc);
}

// 16 scales or biases from element i on (n <= 16 of them, zeros after).
FORGE_VNNI_TARGET inline __m512 scales16(const unsigned char* bytes, ScaleKind kind, int64_t i, int64_t n) {
  const __mmask16 k = __mmask16((1u << n) - 1u);
  if (kind == ScaleKind::F32) return _mm512_maskz_loadu_ps(k, bytes + i * 4);
  const __m256i h = _mm256_maskz_loadu_epi16(k, bytes + i * 2);
  if (kind == ScaleKind::F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));  // bf16: the high half of an f32
}

// For row o of W against a row of x (its step and xsum): sd[g] = s[o, g] *
// d[g] for every group, and the bias term sum_g b[o, g] * sum(x[g]) (in 16
// partial sums, summed by halving).
FORGE_VNNI_TARGET float row_terms(const QmmArgs& a, int64_t o, const float* step, const float* xsum, float* sd) {
  const QuantPlan& p = *a.p;
  __m512 off = _mm512_setzero_ps();
  for (int64_t g = 0; g < p.groups; g += kLanes) {
    const int64_t n = std::min<int64_t>(kLanes, p.groups - g);
    const __m512 s = scales16(a.scales, p.scale_kind, o * p.groups + g, n);
    const __m512 b = scales16(a.biases, p.scale_kind, o * p.groups + g, n);
    _mm512_storeu_ps(sd + g, _mm512_mul_ps(s, _mm512_loadu_ps(step + g)));
    off = _mm512_add_ps(off, _mm512_mul_ps(b, _mm512_loadu_ps(xsum + g)));
  }
  return hsum(off);
}

#pragma GCC diagnostic pop

// FORGE_CPU_PORTABLE=1 keeps the float path (to compare the two).
bool have_vnni() {
  static const bool yes = !std::getenv("FORGE_CPU_PORTABLE") && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return yes;
}

}  // namespace

bool quantized_matvec_vnni(const QmmArgs& a) {
  if (!have_vnni()) return false;
  const QuantPlan& p = *a.p;
  const Acts acts = quantize_acts(a.x, a.m, p);
  const int L = int(p.group_size * p.bits / 32);
  const auto* bytes = reinterpret_cast<const uint8_t*>(a.w);
  const int64_t row_bytes = p.words * 4;
  parallel_for(p.out, a.m * p.in, [&](int64_t o0, int64_t o1) {
    std::vector<float> sd(size_t(acts.step_len), 0.0f);  // s[o, g] * d[r, g], zero padded
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t r = 0; r < a.m; ++r) {
        const float* step = acts.step.data() + r * acts.step_len;
        const float offset = row_terms(a, o, step, acts.xsum.data() + r * acts.step_len, sd.data());
        const uint8_t* row = bytes + o * row_bytes;
        const int8_t* x = acts.planes.data() + r * acts.plane_len;
        const float qx = p.bits == 2   ? row_dot<2>(row, row_bytes, x, sd.data(), L, acts.chunks)
                         : p.bits == 4 ? row_dot<4>(row, row_bytes, x, sd.data(), L, acts.chunks)
                                       : row_dot<8>(row, row_bytes, x, sd.data(), L, acts.chunks);
        const float y = qx + offset;
        a.y[r * p.out + o] = a.bias ? y + a.bias[o] : y;
      }
  });
  return true;
}

}  // namespace forge::cpu

#else

namespace forge::cpu {

bool quantized_matvec_vnni(const QmmArgs&) { return false; }

}  // namespace forge::cpu

#endif
