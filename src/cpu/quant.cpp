// Byte unpacking, MLX affine dequantization and the quantized matmul.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/isa_clones.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/quant_decode.h"
#include "cpu/quant_kernels.h"

namespace forge::cpu {

namespace {

// The bytes of a scales or biases tensor (read once per call: raw_data is
// not free, and a row of W has a scale for every group).
const unsigned char* bytes_of(const Tensor& t) { return static_cast<const unsigned char*>(t.raw_data()); }

// Element i of a scales or biases tensor's bytes as f32 (exact for bf16 and f16).
inline float scale_at(const unsigned char* bytes, const QuantPlan& p, int64_t i) {
  if (p.scale_kind == ScaleKind::F32) {
    float v;
    std::memcpy(&v, bytes + i * 4, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, bytes + i * 2, 2);
  return p.scale_kind == ScaleKind::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// Row o of W, dequantized into row[in].
void dequantize_row(const uint32_t* w, const unsigned char* scales, const unsigned char* biases, const QuantPlan& p,
                    int64_t o, float* row) {
  int per = 32 / p.bits;
  uint32_t mask = (1u << p.bits) - 1u;
  for (int64_t g = 0; g < p.groups; ++g) {
    float s = scale_at(scales, p, o * p.groups + g), b = scale_at(biases, p, o * p.groups + g);
    for (int64_t i = g * p.group_size; i < (g + 1) * p.group_size; ++i) {
      uint32_t word = w[o * p.words + i / per];
      uint32_t q = (word >> (p.bits * (i % per))) & mask;
      float prod = float(q) * s;
      row[i] = prod + b;
    }
  }
}

// From this many rows of x (a prefill), W is dequantized a block of rows at a
// time into an sgemm; fewer rows (decode) read the packed words directly:
// in integers on AVX-512 VNNI (quant_decode_vnni.cpp), else in floats here.
constexpr int64_t kGemmRows = 8;
constexpr int64_t kRowBlock = 64;
// Independent partial sums of a dot product: enough that they vectorize (a
// float sum in one order would not), the same on every ISA. 8 bits go 16
// weights (16 bytes) at a time; 4 bits were faster 32 at a time (16 bytes)
// than 16 (measured), and 2 bits take the same 32. Every group size (32, 64,
// 128) is a multiple.
constexpr int lanes_for(int bits) { return bits == 8 ? 16 : 32; }
template <int Bits>
inline constexpr int kLanes = lanes_for(Bits);

// Weights are read as bytes (the words are little-endian: value j of a word
// is in its byte j * Bits / 8, at bit (j * Bits) % 8). A chunk of kLanes
// weights is C = kLanes * Bits / 8 bytes; its values come out phase by phase,
// q[j * C + k] = value j of byte k = weight P * k + j (P = 8 / Bits values a
// byte), so that each phase is a shift and a mask of C consecutive bytes.
// x is permuted the same way once per call (permute_chunks).
template <int Bits>
inline void unpack_chunk(const uint8_t* bytes, float* q) {
  constexpr int P = 8 / Bits, C = kLanes<Bits> / P;
  constexpr uint32_t mask = (1u << Bits) - 1u;
  for (int j = 0; j < P; ++j)
    for (int k = 0; k < C; ++k) q[j * C + k] = float((uint32_t(bytes[k]) >> (Bits * j)) & mask);
}

// x [in] -> xp [in] in unpack_chunk's order, chunk by chunk.
void permute_chunks(const float* x, int64_t in, int bits, float* xp) {
  const int lanes = lanes_for(bits);
  const int P = 8 / bits, C = lanes / P;
  for (int64_t c = 0; c < in; c += lanes)
    for (int j = 0; j < P; ++j)
      for (int k = 0; k < C; ++k) xp[c + j * C + k] = x[c + P * k + j];
}

// Rows [o0, o1) of W against every row of x (m < kGemmRows):
//   y[r, o] = sum_g s[o, g] * (q[o, g] . x[r, g]) + b[o, g] * sum(x[r, g])
// so each weight is read once, as its bits, and never dequantized. The
// s * (q . x) terms stay in kLanes partial sums across the groups, summed
// once per row; xp holds the rows of x permuted (permute_chunks).
template <int Bits>
inline void qmv_rows_bits(const QmmArgs& a, const float* xp, const double* xsum, int64_t o0, int64_t o1) {
  const QuantPlan& p = *a.p;
  constexpr int kLanes = forge::cpu::kLanes<Bits>;
  const int64_t gs = p.group_size, chunk_bytes = kLanes * Bits / 8;
  const auto* bytes = reinterpret_cast<const uint8_t*>(a.w);
  alignas(64) float q[128];
  for (int64_t o = o0; o < o1; ++o) {
    alignas(64) float lanes[kGemmRows][kLanes] = {};
    double offset[kGemmRows] = {};
    const uint8_t* row = bytes + o * p.words * 4;
    for (int64_t g = 0; g < p.groups; ++g) {
      const uint8_t* group = row + g * (gs / kLanes) * chunk_bytes;
      for (int64_t c = 0; c < gs / kLanes; ++c) unpack_chunk<Bits>(group + c * chunk_bytes, q + c * kLanes);
      const float s = scale_at(a.scales, p, o * p.groups + g);
      const double b = scale_at(a.biases, p, o * p.groups + g);
      for (int64_t r = 0; r < a.m; ++r) {
        const float* x = xp + r * p.in + g * gs;
        float part[kLanes] = {};
        for (int64_t i = 0; i < gs; i += kLanes)
          for (int l = 0; l < kLanes; ++l) part[l] += q[i + l] * x[i + l];
        for (int l = 0; l < kLanes; ++l) lanes[r][l] += s * part[l];
        offset[r] += b * xsum[r * p.groups + g];
      }
    }
    for (int64_t r = 0; r < a.m; ++r) {
      float* v = lanes[r];
      for (int h = kLanes / 2; h > 0; h >>= 1)
        for (int l = 0; l < h; ++l) v[l] += v[l + h];
      const float y = float(double(v[0]) + offset[r]);
      a.y[r * p.out + o] = a.bias ? y + a.bias[o] : y;
    }
  }
}

FORGE_ISA_CLONES void qmv_rows(const QmmArgs& a, const float* xp, const double* xsum, int64_t o0, int64_t o1) {
  switch (a.p->bits) {
    case 2: return qmv_rows_bits<2>(a, xp, xsum, o0, o1);
    case 4: return qmv_rows_bits<4>(a, xp, xsum, o0, o1);
    default: return qmv_rows_bits<8>(a, xp, xsum, o0, o1);
  }
}

// m >= kGemmRows: blocks of kRowBlock rows of W, dequantized and multiplied
// by x in one sgemm each, the blocks spread over the cores.
void qmm_by_blocks(const QmmArgs& a) {
  const QuantPlan& p = *a.p;
  const int64_t blocks = (p.out + kRowBlock - 1) / kRowBlock;
  parallel_for(blocks, a.m * p.in * kRowBlock, [&](int64_t lo, int64_t hi) {
    std::vector<float> block(size_t(kRowBlock * p.in));
    for (int64_t blk = lo; blk < hi; ++blk) {
      const int64_t o0 = blk * kRowBlock, n = std::min(kRowBlock, p.out - o0);
      for (int64_t j = 0; j < n; ++j) dequantize_row(a.w, a.scales, a.biases, p, o0 + j, block.data() + j * p.in);
      gemm_nt_block(a.x, block.data(), a.y + o0, a.m, n, p.in, p.out);
      if (a.bias)
        for (int64_t r = 0; r < a.m; ++r)
          for (int64_t j = 0; j < n; ++j) a.y[r * p.out + o0 + j] += a.bias[o0 + j];
    }
  });
}

}  // namespace

void dequantize_bytes(const Tensor& bytes, Tensor& out) {
  const uint32_t* pw = bytes.data<uint32_t>();
  float* po = out.data<float>();
  for (int64_t i = 0, n = bytes.numel(); i < n; ++i)
    for (int j = 0; j < 4; ++j) po[4 * i + j] = float((pw[i] >> (8 * j)) & 255u);
}

void affine_dequantize(const Tensor& w, const Tensor& scales, const Tensor& biases, const QuantPlan& p,
                       Tensor& out) {
  const uint32_t* pw = w.data<uint32_t>();
  const unsigned char *ps = bytes_of(scales), *pb = bytes_of(biases);
  float* po = out.data<float>();
  for (int64_t o = 0; o < p.out; ++o) dequantize_row(pw, ps, pb, p, o, po + o * p.in);
}

void quantized_matmul(const Tensor& x, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const Tensor* bias, const QuantPlan& p, int64_t m, Tensor& y) {
  const QmmArgs a{x.data<float>(), w.data<uint32_t>(), bytes_of(scales), bytes_of(biases),
                  bias ? bias->data<float>() : nullptr, &p, m, y.data<float>()};
  if (m >= kGemmRows) {
    qmm_by_blocks(a);
    return;
  }
  if (quantized_matvec_vnni(a)) return;
  // Once per call, for every row of W: x permuted as the weights unpack,
  // and sum(x[r, g]).
  std::vector<float> xp(size_t(m * p.in));
  std::vector<double> xsum(size_t(m * p.groups));
  for (int64_t r = 0; r < m; ++r) {
    permute_chunks(a.x + r * p.in, p.in, p.bits, xp.data() + r * p.in);
    for (int64_t g = 0; g < p.groups; ++g) {
      double t = 0;
      for (int64_t i = g * p.group_size; i < (g + 1) * p.group_size; ++i) t += a.x[r * p.in + i];
      xsum[size_t(r * p.groups + g)] = t;
    }
  }
  parallel_for(p.out, m * p.in, [&](int64_t lo, int64_t hi) { qmv_rows(a, xp.data(), xsum.data(), lo, hi); });
}

void affine_embedding(const Tensor& ids, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const QuantPlan& p, Tensor& out) {
  const uint32_t* pw = w.data<uint32_t>();
  // i32 and u32 ids share the bits of in-range values.
  const auto* pid = static_cast<const uint32_t*>(ids.raw_data());
  const unsigned char *ps = bytes_of(scales), *pb = bytes_of(biases);
  float* po = out.data<float>();
  for (int64_t r = 0, n = ids.numel(); r < n; ++r) dequantize_row(pw, ps, pb, p, pid[r], po + r * p.in);
}

}  // namespace forge::cpu
