// silu_gate and its backward, top_k, conv1d_depthwise.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "cpu/isa_clones.h"
#include "cpu/llama_kernels.h"
#include "cpu/vec_math.h"

namespace forge::cpu {

FORGE_ISA_CLONES void silu_gate(const Tensor& up, const Tensor& gate, Tensor& out) {
  const float* pu = up.data<float>();
  const float* pg = gate.data<float>();
  float* po = out.data<float>();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = float(pu[i] * vm::sigmoid(pu[i]) * pg[i]);
}

FORGE_ISA_CLONES void silu_gate_bwd(const Tensor& up, const Tensor& gate, const Tensor& dy, Tensor& grad_up, Tensor& grad_gate) {
  const float* pu = up.data<float>();
  const float* pg = gate.data<float>();
  const float* pd = dy.data<float>();
  float* gu = grad_up.data<float>();
  float* gg = grad_gate.data<float>();
  for (int64_t i = 0, n = dy.numel(); i < n; ++i) {
    double u = pu[i], s = vm::sigmoid(u);
    gu[i] = float(double(pd[i]) * pg[i] * s * (1.0 + u * (1.0 - s)));
    gg[i] = float(double(pd[i]) * u * s);
  }
}

void top_k(const Tensor& x, int64_t rows, int64_t n, int64_t k, Tensor& out) {
  const float* px = x.data<float>();
  uint32_t* po = out.data<uint32_t>();
  std::vector<uint32_t> keys(static_cast<size_t>(n)), idx(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, px + r * n + i, 4);
      keys[i] = top_k_key(bits);
    }
    std::iota(idx.begin(), idx.end(), 0u);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](uint32_t a, uint32_t b) {
      return keys[a] != keys[b] ? keys[a] > keys[b] : a < b;
    });
    std::copy(idx.begin(), idx.begin() + k, po + r * k);
  }
}

void conv1d_depthwise(const Tensor& x, const Tensor& w, const Tensor& b, const Conv1dPlan& p, Tensor& out) {
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  for (int64_t r = 0; r < p.rows; ++r) {
    int64_t d = r % p.dim;
    const float* xr = px + r * p.seq;
    for (int64_t s = 0; s < p.seq; ++s) {
      float left = s > 0 ? xr[s - 1] : 0.0f, right = s + 1 < p.seq ? xr[s + 1] : 0.0f;
      float acc = pb[d];
      acc += pw[3 * d] * left;
      acc += pw[3 * d + 1] * xr[s];
      acc += pw[3 * d + 2] * right;
      po[r * p.seq + s] = acc;
    }
  }
}

}  // namespace forge::cpu
