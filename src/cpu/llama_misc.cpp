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

namespace {

// One row of n elements each: out = silu(u) * g, and its gradients.
inline void silu_gate_row(const float* u, const float* g, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = float(u[i] * vm::sigmoid(u[i]) * g[i]);
}

inline void silu_gate_bwd_row(const float* u, const float* g, const float* dy, float* du, float* dg, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double x = u[i], s = vm::sigmoid(x);
    du[i] = float(double(dy[i]) * g[i] * s * (1.0 + x * (1.0 - s)));
    dg[i] = float(double(dy[i]) * x * s);
  }
}

}  // namespace

FORGE_ISA_CLONES void silu_gate(const Tensor& up, const Tensor& gate, Tensor& out) {
  silu_gate_row(up.data<float>(), gate.data<float>(), out.data<float>(), out.numel());
}

FORGE_ISA_CLONES void silu_gate_bwd(const Tensor& up, const Tensor& gate, const Tensor& dy, Tensor& grad_up, Tensor& grad_gate) {
  silu_gate_bwd_row(up.data<float>(), gate.data<float>(), dy.data<float>(), grad_up.data<float>(),
                    grad_gate.data<float>(), dy.numel());
}

FORGE_ISA_CLONES void silu_gate_packed(const Tensor& gu, int64_t rows, int64_t n, Tensor& out) {
  const float* pg = gu.data<float>();
  float* po = out.data<float>();
  for (int64_t r = 0; r < rows; ++r) silu_gate_row(pg + r * 2 * n, pg + r * 2 * n + n, po + r * n, n);
}

FORGE_ISA_CLONES void silu_gate_packed_bwd(const Tensor& gu, const Tensor& dy, int64_t rows, int64_t n, Tensor& dgu) {
  const float* pg = gu.data<float>();
  const float* pd = dy.data<float>();
  float* po = dgu.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = r * 2 * n;
    silu_gate_bwd_row(pg + at, pg + at + n, pd + r * n, po + at, po + at + n, n);
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
