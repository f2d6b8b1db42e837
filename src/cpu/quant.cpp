// Byte unpacking, MLX affine dequantization and the quantized matmul.
#include <algorithm>
#include <cstring>
#include <vector>

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
// time into an sgemm; fewer rows (decode) take the integer path of
// quant_decode.cpp.
constexpr int64_t kGemmRows = 8;
constexpr int64_t kRowBlock = 64;
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
  quantized_matvec(a);
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
