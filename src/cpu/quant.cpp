// Byte unpacking, MLX affine dequantization and the quantized matmul.
#include <cstring>
#include <vector>

#include "cpu/quant_kernels.h"

namespace forge::cpu {

namespace {

// Element i of a scales or biases tensor as f32 (exact for bf16 and f16).
float scale_at(const Tensor& t, const QuantPlan& p, int64_t i) {
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
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
void dequantize_row(const uint32_t* w, const Tensor& scales, const Tensor& biases, const QuantPlan& p, int64_t o,
                    float* row) {
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
  float* po = out.data<float>();
  for (int64_t o = 0; o < p.out; ++o) dequantize_row(pw, scales, biases, p, o, po + o * p.in);
}

void quantized_matmul(const Tensor& x, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const Tensor* bias, const QuantPlan& p, int64_t m, Tensor& y) {
  const float* pb = bias ? bias->data<float>() : nullptr;
  const uint32_t* pw = w.data<uint32_t>();
  const float* px = x.data<float>();
  float* py = y.data<float>();
  std::vector<float> row(size_t(p.in));  // one dequantized row of W at a time
  for (int64_t o = 0; o < p.out; ++o) {
    dequantize_row(pw, scales, biases, p, o, row.data());
    for (int64_t r = 0; r < m; ++r) {
      const float* xr = px + r * p.in;
      double acc = 0;
      for (int64_t i = 0; i < p.in; ++i) acc += double(xr[i]) * row[i];
      py[r * p.out + o] = pb ? float(acc) + pb[o] : float(acc);
    }
  }
}

void affine_embedding(const Tensor& ids, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const QuantPlan& p, Tensor& out) {
  const uint32_t* pw = w.data<uint32_t>();
  // i32 and u32 ids share the bits of in-range values.
  const auto* pid = static_cast<const uint32_t*>(ids.raw_data());
  float* po = out.data<float>();
  for (int64_t r = 0, n = ids.numel(); r < n; ++r) dequantize_row(pw, scales, biases, p, pid[r], po + r * p.in);
}

}  // namespace forge::cpu
