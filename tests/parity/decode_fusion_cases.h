// Shared by the fusion parity tests (test_decode_norm_ops.cpp,
// test_decode_layernorm_ops.cpp, test_tile_epilogue_ops.cpp): their
// tolerance, the bf16 copy of a weight, a Conv1D weight's transpose and the
// table of shapes.
#pragma once
#include <cmath>
#include <vector>

#include "parity.h"

namespace forge::testing {

// matmul's tolerance (sums in another order) plus the norm's statistics,
// formed by another reduction.
inline double decode_fusion_tolerance(int64_t k) { return 4e-6 * std::sqrt(double(k) + 1); }

// w as `dt` (f32 as it is, bf16 rounded).
inline Tensor weight_as(const Tensor& w, DType dt) {
  if (dt == DType::F32) return w;
  std::vector<uint16_t> h;
  for (float v : w.to_vector<float>()) h.push_back(f32_to_bf16(v));
  return Tensor::from_data(h.data(), w.shape(), DType::BF16);
}

// Rows m (1, 3: the 4-row kernels; 8, 17: the 8-row ones past k 256, or the
// serial one; 40: composed) x k (serial up to 256, 32 lanes past it; 30 is
// not a multiple of 4: composed); n a multiple of 4 past k 256 with at most
// 4 rows: the [k, n] kernel's 4-column groups (36: a partial workgroup);
// k 1040 takes the 32-lane kernels past their first round of loads in
// flight (1,024 values of a column in matvec_vec4.wgsl, 512 rows in the
// [k, n] kernel).
// w [n, k] -> [k, n] (a Conv1D weight), on the host.
inline Tensor transposed(const Tensor& w) {
  const int64_t n = w.dim(0), k = w.dim(1);
  const std::vector<float> v = w.to_vector<float>();
  std::vector<float> t(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) t[size_t(j * n + i)] = v[size_t(i * k + j)];
  return Tensor::from_vector(t, {k, n});
}

struct DecodeFusionCase {
  int64_t m, k, n;
};
inline const std::vector<DecodeFusionCase> kDecodeFusionCases = {
    {1, 64, 40}, {3, 260, 17}, {1, 516, 9}, {8, 516, 33}, {17, 64, 5},
    {40, 132, 7}, {2, 30, 7},  {4, 8, 1},   {1, 516, 64}, {3, 300, 36}, {2, 1040, 12}};

}  // namespace forge::testing
