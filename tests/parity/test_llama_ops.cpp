// Parity, values and validation for the Llama ops (forge/ops/llama.h): every
// op on the CPU and on WebGPU over shapes with odd sizes, tolerances stated
// per op; the chunked paths under a lowered binding limit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "parity/parity.h"

using namespace forge;
using namespace forge::testing;

namespace {

const std::vector<Shape> kElementwiseShapes = {{1}, {3}, {17}, {129}, {3, 17}, {2, 3, 129}, {1000, 3}};
const std::vector<Shape> kRowShapes = {{1}, {3}, {17, 1}, {3, 17}, {17, 129}, {2, 3, 129}, {5, 300}, {1, 1, 576},
                                       {130, 24}};

// ---- RoPE -------------------------------------------------------------------------

struct RopeCase {
  Shape shape;
  int64_t head_dim, pos;
  double theta;
};

const std::vector<RopeCase> kRopeCases = {
    {{6}, 6, 0, 1e4},           {{2}, 2, 129, 1e5},          {{3, 12}, 4, 5, 1e5},
    {{17, 68}, 34, 129, 1e4},   {{2, 3, 2, 64}, 64, 7, 1e5}, {{2, 129, 16}, 8, 1000, 1e5},
    {{1, 1, 3 * 64}, 64, 4095, 1e5},
};

TEST(LlamaParity, Rope) {
  uint32_t seed = 1;
  for (const RopeCase& c : kRopeCases) {
    Tensor x = random_tensor(c.shape, seed++);
    // Both backends read the same host-built cos/sin table; only the
    // rounding of a * c - b * s (a fused multiply-add or not) may differ:
    // 1e-6 absolute for |x| <= 1.
    for (bool inverse : {false, true}) {
      auto op = [&](auto& t) {
        Tensor y = t[0].clone();
        if (inverse) rope_backward(y, c.head_dim, c.pos, c.theta);
        else rope(y, c.head_dim, c.pos, c.theta);
        return y;
      };
      EXPECT_TRUE(cpu_gpu_parity({x}, op, 1e-6, 1e-6)) << shape_str(c.shape) << " inverse " << inverse;
    }
  }
}

TEST(LlamaValues, RopeKnownRotation) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    // head_dim 2: one pair, inv_freq 1, so position p rotates by p radians.
    Tensor x = Tensor::from_vector<float>({1, 0, 0, 1, 2, 0}, {3, 2}, d);
    rope(x, 2, 1);
    std::vector<float> want = {std::cos(1.0f), std::sin(1.0f), -std::sin(2.0f), std::cos(2.0f),
                               2 * std::cos(3.0f), 2 * std::sin(3.0f)};
    EXPECT_TRUE(all_close(x.to_vector<float>(), want, 1e-6, 0)) << d.name();
    // head_dim 4, theta 100: pair 1 has inv_freq 100^(-1/2) = 0.1; position 5 -> 0.5 rad.
    Tensor y = Tensor::from_vector<float>({0, 1, 0, 0}, {4}, d);
    rope(y, 4, 5, 100.0);
    EXPECT_TRUE(all_close(y.to_vector<float>(), {0, std::cos(0.5f), 0, std::sin(0.5f)}, 1e-6, 0)) << d.name();
    // The backward undoes the forward (rotation by the negated angle).
    Tensor z = random_tensor({2, 5, 3, 8}, 7).to(d);
    Tensor keep = z.clone();
    rope(z, 8, 33, 1e5);
    rope_backward(z, 8, 33, 1e5);
    EXPECT_TRUE(all_close(z, keep, 1e-6, 1e-6)) << d.name();
    // The head-major layout [h, T, hd] as a batch of h sequences: the same
    // values as the token-major [T, h * hd] call, bitwise.
    {
      const int64_t h = 3, t = 5, hd = 8;
      std::vector<float> tm = random_values(t * h * hd, 12), hm(tm.size());
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < h; ++j)
          for (int64_t e = 0; e < hd; ++e) hm[(j * t + i) * hd + e] = tm[(i * h + j) * hd + e];
      Tensor a = Tensor::from_vector(tm, {t, h * hd}, d), b = Tensor::from_vector(hm, {h, t, hd}, d);
      rope(a, hd, 17, 1e5);
      rope(b, hd, 17, 1e5);
      auto av = a.to_vector<float>(), bv = b.to_vector<float>();
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < h; ++j)
          for (int64_t e = 0; e < hd; ++e)
            ASSERT_EQ(bv[(j * t + i) * hd + e], av[(i * h + j) * hd + e]) << d.name();
    }
    // Each batch row starts at `pos`: equal batch rows stay equal.
    std::vector<float> row = random_values(3 * 16, 9);
    std::vector<float> both = row;
    both.insert(both.end(), row.begin(), row.end());
    Tensor b = Tensor::from_vector(both, {2, 3, 16}, d);
    rope(b, 8, 11);
    auto v = b.to_vector<float>();
    EXPECT_TRUE(std::equal(v.begin(), v.begin() + 48, v.begin() + 48)) << d.name();
  }
}

// ---- RMS norm -----------------------------------------------------------------------

TEST(LlamaParity, RmsNorm) {
  // Both row layouts (130 rows: three workgroups of them at SwiftShader's 4
  // lanes a subgroup, the last part past the rows).
  for (const ReduceForm& form : reduce_forms()) {
    RowLayoutScope layout(form);
    SCOPED_TRACE(form.name);
    uint32_t seed = 100;
    for (const Shape& s : kRowShapes) {
      int64_t c = s.back();
      int64_t rows = numel(s) / c;
      Tensor x = random_tensor(s, seed++, -2.0f, 3.0f);
      Tensor r = random_tensor(s, seed++);
      Tensor w = random_tensor({c}, seed++, 0.5f, 1.5f);
      Tensor dy = random_tensor(s, seed++);
      // f32 row reduction on the GPU vs double on the CPU; outputs O(3): 1e-5
      // absolute and relative.
      EXPECT_TRUE(cpu_gpu_parity({x, w}, [](auto& t) { return rms_norm(t[0], t[1]); }, 1e-5, 1e-5)) << shape_str(s);
      EXPECT_TRUE(cpu_gpu_parity({x, r, w}, [](auto& t) { return rms_norm_residual(t[0], t[1], t[2]).out; }, 1e-5,
                                 1e-5))
          << shape_str(s);
      // The sum is one f32 add: exact.
      EXPECT_TRUE(cpu_gpu_parity({x, r, w}, [](auto& t) { return rms_norm_residual(t[0], t[1], t[2]).sum; }, 0, 0))
          << shape_str(s);
      // dx: two f32 row reductions, 3e-5 absolute; dweight sums `rows` terms:
      // 1e-5 (1 + sqrt(rows)) absolute, 1e-5 relative.
      double sum_atol = 1e-5 * (1 + std::sqrt(double(rows)));
      EXPECT_TRUE(cpu_gpu_parity({x, w, dy}, [](auto& t) { return rms_norm_bwd(t[0], t[1], t[2]).dx; }, 3e-5, 1e-5))
          << shape_str(s);
      EXPECT_TRUE(cpu_gpu_parity({x, w, dy}, [](auto& t) { return rms_norm_bwd(t[0], t[1], t[2]).dweight; }, sum_atol,
                                 1e-5))
          << shape_str(s);
      // With dx_add (r here): r + the norm's dx, on every device as add gives it.
      EXPECT_TRUE(cpu_gpu_parity(
          {x, w, dy, r}, [](auto& t) { return rms_norm_bwd(t[0], t[1], t[2], 1e-5f, &t[3]).dx; }, 3e-5, 1e-5))
          << shape_str(s);
      for (const Device& dev : test_devices()) {
        const Tensor X = x.to(dev), W = w.to(dev), DY = dy.to(dev), R = r.to(dev);
        const Tensor plain = rms_norm_bwd(X, W, DY).dx, joined = rms_norm_bwd(X, W, DY, 1e-5f, &R).dx;
        EXPECT_TRUE(all_close(joined.to(Device::cpu()), add(R, plain).to(Device::cpu()), 1e-6, 1e-6))
            << dev.name() << " " << shape_str(s);
      }
    }
  }
}

TEST(LlamaValues, RmsNorm) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    // Row (3, 4): mean square 12.5, r = 1 / sqrt(12.5 + eps); weight (1, 2).
    Tensor x = Tensor::from_vector<float>({3, 4}, {1, 2}, d);
    Tensor w = Tensor::from_vector<float>({1, 2}, {2}, d);
    double r = 1.0 / std::sqrt(12.5 + 1e-5);
    EXPECT_TRUE(all_close(rms_norm(x, w).to_vector<float>(), {float(3 * r), float(8 * r)}, 1e-6, 1e-6)) << d.name();
    // The fused form equals rms_norm of the sum and returns the sum.
    Tensor res = random_tensor({4, 33}, 3).to(d), h = random_tensor({4, 33}, 4).to(d);
    Tensor g = random_tensor({33}, 5).to(d);
    RmsNormResidual f = rms_norm_residual(h, res, g);
    EXPECT_TRUE(all_close(f.sum, add(h, res), 0, 0)) << d.name();
    EXPECT_TRUE(all_close(f.out, rms_norm(add(h, res), g), 0, 0)) << d.name();
  }
}

// ---- Gated MLP and elementwise backwards ---------------------------------------------

TEST(LlamaParity, SiluGate) {
  uint32_t seed = 200;
  for (const Shape& s : kElementwiseShapes) {
    Tensor u = random_tensor(s, seed++, -6.0f, 6.0f);
    Tensor g = random_tensor(s, seed++, -2.0f, 2.0f);
    Tensor dy = random_tensor(s, seed++);
    // The CPU rounds a double evaluation once; the GPU's f32 exp loses a few
    // ulps for |u| up to 6, scaled by |gate| <= 2: 4e-6 absolute, 1e-5 relative.
    EXPECT_TRUE(cpu_gpu_parity({u, g}, [](auto& t) { return silu_gate_fused(t[0], t[1]); }, 4e-6, 1e-5))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({u, g, dy}, [](auto& t) { return silu_gate_fused_backward(t[0], t[1], t[2]).grad_up; },
                               1e-5, 2e-5))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity(
        {u, g, dy}, [](auto& t) { return silu_gate_fused_backward(t[0], t[1], t[2]).grad_gate; }, 1e-5, 2e-5))
        << shape_str(s);
  }
  // Against the unfused form on the CPU: silu rounded, then the product
  // rounded, vs one rounding: within 2 ulps (3e-7 relative, 1e-12 absolute).
  Tensor u = random_tensor({5, 77}, 1, -6.0f, 6.0f), g = random_tensor({5, 77}, 2);
  EXPECT_TRUE(all_close(silu_gate_fused(u, g), mul(silu(u), g), 1e-12, 3e-7));
}

// The joined form: gu [.., 2n] = [up | gate] read in place. On the CPU it
// equals the separate-tensor op over gu's halves exactly (one kernel per
// element); on WebGPU it matches the CPU at silu_gate_fused's tolerances.
TEST(LlamaParity, SiluGatePacked) {
  uint32_t seed = 250;
  for (const Shape& half : std::vector<Shape>{{1}, {3}, {17}, {3, 17}, {2, 3, 129}, {1000, 3}}) {
    Shape s = half;
    s.back() *= 2;
    Tensor gu = random_tensor(s, seed++, -6.0f, 6.0f), dy = random_tensor(half, seed++);
    const std::vector<Tensor> parts = split_columns(gu, {half.back(), half.back()});
    EXPECT_EQ(silu_gate_packed(gu).to_vector<float>(), silu_gate_fused(parts[0], parts[1]).to_vector<float>())
        << shape_str(s);
    const SiluGateGrads want = silu_gate_fused_backward(parts[0], parts[1], dy);
    EXPECT_EQ(silu_gate_packed_backward(gu, dy).to_vector<float>(),
              concat_columns({want.grad_up, want.grad_gate}).to_vector<float>())
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({gu}, [](auto& t) { return silu_gate_packed(t[0]); }, 1e-5, 1e-5)) << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({gu, dy}, [](auto& t) { return silu_gate_packed_backward(t[0], t[1]); }, 3e-5, 2e-5))
        << shape_str(s);
  }
}

TEST(LlamaParity, BinaryBackwards) {
  uint32_t seed = 300;
  for (const Shape& s : kElementwiseShapes) {
    Tensor grad = random_tensor(s, seed++), a = random_tensor(s, seed++), b = random_tensor(s, seed++);
    // Negation and one product: exact.
    EXPECT_TRUE(cpu_gpu_parity({grad}, [](auto& t) { return sub_backward(t[0]).grad_b; }, 0, 0)) << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({grad, a, b}, [](auto& t) { return mul_backward(t[0], t[1], t[2]).grad_a; }, 0, 0))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({grad, a, b}, [](auto& t) { return mul_backward(t[0], t[1], t[2]).grad_b; }, 0, 0))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({grad}, [](auto& t) { return add_backward(t[0]).grad_b; }, 0, 0)) << shape_str(s);
  }
  Tensor g = Tensor::from_vector<float>({1, -2}, {2});
  EXPECT_EQ(sub_backward(g).grad_b.to_vector<float>(), (std::vector<float>{-1, 2}));
  EXPECT_EQ(sub_backward(g).grad_a.to_vector<float>(), (std::vector<float>{1, -2}));
  EXPECT_EQ(add_backward(g).grad_a.to_vector<float>(), (std::vector<float>{1, -2}));
}

TEST(LlamaParity, MatmulLayouts) {
  struct Case {
    int64_t m, k, n;
  };
  uint32_t seed = 400;
  for (Case c : {Case{1, 1, 1}, Case{3, 17, 5}, Case{17, 129, 3}, Case{129, 3, 17}}) {
    Tensor a = random_tensor({c.m, c.k}, seed++), b = random_tensor({c.k, c.n}, seed++);
    Tensor bt = random_tensor({c.n, c.k}, seed++), at = random_tensor({c.k, c.m}, seed++);
    MatmulOptions tb, ta;
    tb.transpose_b = true;
    ta.transpose_a = true;
    // The wrappers are the core matmul: bitwise equal to it on the CPU.
    EXPECT_TRUE(all_close(matmul_nn(a, b), matmul(a, b), 0, 0));
    EXPECT_TRUE(all_close(matmul_nt(a, bt), matmul(a, bt, tb), 0, 0));
    EXPECT_TRUE(all_close(matmul_tn(at, b), matmul(at, b, ta), 0, 0));
    // GPU vs CPU: f32 sums of k <= 129 terms of |x| <= 1: 2e-5 absolute.
    EXPECT_TRUE(cpu_gpu_parity({a, b}, [](auto& t) { return matmul_nn(t[0], t[1]); }, 2e-5, 1e-5));
    EXPECT_TRUE(cpu_gpu_parity({a, bt}, [](auto& t) { return matmul_nt(t[0], t[1]); }, 2e-5, 1e-5));
    EXPECT_TRUE(cpu_gpu_parity({at, b}, [](auto& t) { return matmul_tn(t[0], t[1]); }, 2e-5, 1e-5));
  }
  // Batched: [2, 3, 17] @ [2, 5, 17]^T.
  Tensor a = random_tensor({2, 3, 17}, 1), b = random_tensor({2, 5, 17}, 2);
  EXPECT_TRUE(cpu_gpu_parity({a, b}, [](auto& t) { return matmul_nt(t[0], t[1]); }, 2e-5, 1e-5));
  EXPECT_EQ(matmul_nt(a, b).shape(), (Shape{2, 3, 5}));
}

// ---- Top-k -----------------------------------------------------------------------------

// The reference: indices sorted by value descending (total order of the f32
// bit patterns), lower index first among equal values.
std::vector<uint32_t> top_k_reference(const std::vector<float>& x, int64_t rows, int64_t n, int64_t k) {
  auto key = [](float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b ^ ((b & 0x80000000u) ? 0xFFFFFFFFu : 0x80000000u);
  };
  std::vector<uint32_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0u);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](uint32_t a, uint32_t b) { return key(x[r * n + a]) > key(x[r * n + b]); });
    out.insert(out.end(), idx.begin(), idx.begin() + k);
  }
  return out;
}

void expect_top_k(const std::vector<float>& values, int64_t rows, int64_t n, int64_t k, const std::string& what) {
  Shape shape = rows == 1 ? Shape{n} : Shape{rows, n};
  Tensor x = Tensor::from_vector(values, shape);
  auto want = top_k_reference(values, rows, n, k);
  // Indices are exact on both backends.
  EXPECT_EQ(top_k(x, k).to_vector<uint32_t>(), want) << what << " cpu";
  EXPECT_EQ(top_k(x.to(gpu_device()), k).to_vector<uint32_t>(), want) << what << " webgpu";
}

TEST(LlamaParity, TopK) {
  uint32_t seed = 500;
  for (int64_t n : {1, 3, 17, 129, 1000, 5003}) {
    for (int64_t k : {int64_t(1), std::min<int64_t>(n, 5), std::min<int64_t>(n, 64), n}) {
      if (n == 5003 && k == n) continue;  // O(k^2) placing; covered at 1000
      auto v = random_values(n, seed++, -3.0f, 3.0f);
      expect_top_k(v, 1, n, k, "random n " + std::to_string(n) + " k " + std::to_string(k));
      // Heavy ties: 5 distinct values.
      for (auto& e : v) e = std::floor(e);
      expect_top_k(v, 1, n, k, "ties n " + std::to_string(n) + " k " + std::to_string(k));
    }
  }
  // All equal: the lowest indices, in order.
  expect_top_k(std::vector<float>(300, 2.5f), 1, 300, 7, "all equal");
  // Signed zeros, infinities, negatives only.
  float inf = std::numeric_limits<float>::infinity();
  expect_top_k({0.0f, -0.0f, -inf, inf, -1.0f, 0.0f, inf, -0.0f}, 1, 8, 8, "specials");
  // A quiet NaN (sign bit clear) ranks above +inf on both backends.
  float nan = std::numeric_limits<float>::quiet_NaN();
  expect_top_k({1.0f, nan, inf, -2.0f}, 1, 4, 2, "nan");
  {
    std::vector<uint32_t> want = {1, 2};
    EXPECT_EQ(top_k(Tensor::from_vector<float>({1.0f, nan, inf, -2.0f}, {4}), 2).to_vector<uint32_t>(), want);
  }
  expect_top_k({-5, -1, -3, -1, -7}, 1, 5, 3, "negatives");
  // Batched rows.
  expect_top_k(random_values(7 * 129, 9), 7, 129, 10, "batched");
}

TEST(LlamaChunked, TopK) {
  // 200 rows of 129 values (516 bytes; aligned runs of 64 rows): 4 chunks.
  LoweredBindingLimit limit(40000);
  auto v = random_values(200 * 129, 77);
  for (size_t i = 0; i < v.size(); i += 3) v[i] = std::round(v[i]);
  expect_top_k(v, 200, 129, 5, "chunked");
}

// ---- Depthwise convolution -------------------------------------------------------

TEST(LlamaParity, Conv1dDepthwise) {
  uint32_t seed = 600;
  for (Shape s : std::vector<Shape>{{1, 1}, {3, 1}, {1, 3}, {3, 17}, {17, 129}, {2, 3, 5}, {3, 129, 17}}) {
    int64_t dim = s[s.size() - 2];
    Tensor x = random_tensor(s, seed++), w = random_tensor({dim, 3}, seed++), b = random_tensor({dim}, seed++);
    // Four f32 terms summed in one order on both; a fused multiply-add may
    // round differently: 1e-6 absolute.
    EXPECT_TRUE(cpu_gpu_parity({x, w, b}, [](auto& t) { return conv1d_depthwise(t[0], t[1], t[2]); }, 1e-6, 1e-6))
        << shape_str(s);
  }
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    // One channel, x = (1, 2, 3), w = (1, 10, 100), b = 0.5:
    // out = (0.5 + 10 + 200, 0.5 + 1 + 20 + 300, 0.5 + 2 + 30).
    Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 3}, d);
    Tensor w = Tensor::from_vector<float>({1, 10, 100}, {1, 3}, d);
    Tensor b = Tensor::from_vector<float>({0.5f}, {1}, d);
    EXPECT_EQ(conv1d_depthwise(x, w, b).to_vector<float>(), (std::vector<float>{210.5f, 321.5f, 32.5f})) << d.name();
  }
}

// ---- Chunked paths -------------------------------------------------------------------

TEST(LlamaChunked, RowAndElementwiseOps) {
  // Rows of 64 values (256 bytes) under a 4 KiB limit: 16 rows per dispatch
  // (rope's cos/sin table, [50, 8, 2], is bound whole: 3200 bytes).
  Tensor x = random_tensor({50, 64}, 1), r = random_tensor({50, 64}, 2), dy = random_tensor({50, 64}, 3);
  Tensor w = random_tensor({64}, 4, 0.5f, 1.5f), b = random_tensor({50}, 5), cw = random_tensor({50, 3}, 6);
  LoweredBindingLimit limit(4096);
  EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { Tensor y = t[0].clone(); rope(y, 16, 3, 1e5); return y; }, 1e-6, 1e-6));
  EXPECT_TRUE(cpu_gpu_parity({x, w}, [](auto& t) { return rms_norm(t[0], t[1]); }, 1e-5, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, r, w}, [](auto& t) { return rms_norm_residual(t[0], t[1], t[2]).out; }, 1e-5, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, r, w}, [](auto& t) { return rms_norm_residual(t[0], t[1], t[2]).sum; }, 0, 0));
  EXPECT_TRUE(cpu_gpu_parity({x, w, dy}, [](auto& t) { return rms_norm_bwd(t[0], t[1], t[2]).dx; }, 3e-5, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, w, dy}, [](auto& t) { return rms_norm_bwd(t[0], t[1], t[2]).dweight; }, 1e-4, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, w, dy, r}, [](auto& t) { return rms_norm_bwd(t[0], t[1], t[2], 1e-5f, &t[3]).dx; },
                             3e-5, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, w, dy, r}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2], 1e-5f, &t[3]).dx; },
                             3e-5, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, r}, [](auto& t) { return silu_gate_fused(t[0], t[1]); }, 4e-6, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, r, dy}, [](auto& t) { return silu_gate_fused_backward(t[0], t[1], t[2]).grad_up; },
                             1e-5, 2e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, cw, b}, [](auto& t) { return conv1d_depthwise(t[0], t[1], t[2]); }, 1e-6, 1e-6));
  // The joined silu gate: rows of 128 values in, 64 out (8 rows a dispatch).
  Tensor gu = concat_columns({x, r}), half = random_tensor({50, 64}, 7);
  EXPECT_TRUE(cpu_gpu_parity({gu}, [](auto& t) { return silu_gate_packed(t[0]); }, 4e-6, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({gu, half}, [](auto& t) { return silu_gate_packed_backward(t[0], t[1]); }, 1e-5, 2e-5));
}

// ---- Validation ------------------------------------------------------------------------

TEST(LlamaValidation, Errors) {
  Tensor x = random_tensor({3, 12}, 1);
  expect_error<ShapeError>("rope", [&] { rope(x, 5, 0); }, "f32[3, 12]");
  expect_error<ShapeError>("rope", [&] { rope(x, 8, 0); }, "hidden");
  expect_error<ValueError>("rope", [&] { rope(x, 4, -1); });
  expect_error<ValueError>("rope_backward", [&] { rope_backward(x, 4, 0, 0.0); });
  Tensor x4 = random_tensor({1, 2, 3, 4}, 2);
  expect_error<ShapeError>("rope", [&] { rope(x4, 2, 0); }, "rank-4");
  Tensor w = random_tensor({11}, 3);
  expect_error<ShapeError>("rms_norm", [&] { rms_norm(x, w); }, "f32[11]");
  expect_error<ShapeError>("rms_norm_residual", [&] { rms_norm_residual(x, random_tensor({3, 11}, 4), w); },
                           "f32[3, 11]");
  expect_error<ShapeError>("rms_norm_bwd", [&] { rms_norm_bwd(x, random_tensor({12}, 5), random_tensor({3}, 6)); });
  const Tensor short_add = random_tensor({2, 12}, 8);
  expect_error<ShapeError>("rms_norm_bwd", [&] { rms_norm_bwd(x, random_tensor({12}, 5), x, 1e-5f, &short_add); },
                           "dx_add");
  expect_error<ValueError>("rms_norm", [&] { rms_norm(x, random_tensor({12}, 5), -1.0f); });
  expect_error<ShapeError>("silu_gate_fused", [&] { silu_gate_fused(x, random_tensor({12, 3}, 7)); }, "f32[12, 3]");
  expect_error<ShapeError>("silu_gate_fused_backward", [&] { silu_gate_fused_backward(x, x, w); });
  expect_error<ShapeError>("mul_backward", [&] { mul_backward(x, x, w); });
  // x [3, 12] as a joined [up | gate] of n = 6; w [11] has no even halves.
  expect_error<ShapeError>("silu_gate_packed", [&] { silu_gate_packed(w); }, "f32[11]");
  expect_error<ShapeError>("silu_gate_packed_backward", [&] { silu_gate_packed_backward(x, x); }, "half its last dim");
  expect_error<DTypeError>("silu_gate_packed", [&] { silu_gate_packed(Tensor::zeros({2, 4}, DType::I32)); });
  expect_error<DeviceError>("silu_gate_packed_backward",
                            [&] { silu_gate_packed_backward(x, random_tensor({3, 6}, 10).to(gpu_device())); });
  expect_error<DeviceError>("silu_gate_fused", [&] { silu_gate_fused(x, x.to(gpu_device())); });
  expect_error<ValueError>("top_k", [&] { top_k(w, 0); }, "f32[11]");
  expect_error<ValueError>("top_k", [&] { top_k(w, 12); });
  expect_error<ShapeError>("top_k", [&] { top_k(x4, 1); });
  expect_error<ShapeError>(
      "conv1d_depthwise", [&] { conv1d_depthwise(x, random_tensor({3, 2}, 8), random_tensor({3}, 9)); },
                           "f32[3, 2]");
  expect_error<DTypeError>("top_k", [&] { top_k(Tensor::zeros({4}, DType::U32), 1); });
}

}  // namespace

// ---- rope_append ----------------------------------------------------------------

struct RopeAppendCase {
  int64_t B, T, nh, nkv, hd, cap, at;
};

// The fused op against the ops it stands for, on the CPU: rope of q and k,
// then kv_append of k and v. Odd sizes, one and several sequences, slots that
// start off the binding alignment, a whole-cache fill.
TEST(LlamaParity, RopeAppendEqualsRopeThenAppendOnEveryDevice) {
  const std::vector<RopeAppendCase> cases = {
      {1, 1, 4, 2, 8, 16, 5},  {1, 3, 3, 1, 6, 9, 6},    {2, 1, 4, 4, 16, 7, 3},
      {2, 5, 6, 2, 10, 12, 0}, {1, 7, 2, 2, 64, 7, 0},   {3, 2, 5, 1, 4, 33, 31},
  };
  uint32_t seed = 100;
  for (const Device& dev : test_devices()) {
    for (const RopeAppendCase& c : cases) {
      SCOPED_TRACE(dev.name() + " B" + std::to_string(c.B) + " T" + std::to_string(c.T) + " at" + std::to_string(c.at));
      Tensor q = random_tensor({c.B, c.T, c.nh, c.hd}, seed++), k = random_tensor({c.B, c.T, c.nkv, c.hd}, seed++);
      Tensor v = random_tensor({c.B, c.T, c.nkv, c.hd}, seed++);
      Tensor kc = random_tensor({c.B, c.cap, c.nkv, c.hd}, seed++), vc = random_tensor({c.B, c.cap, c.nkv, c.hd}, seed++);
      const Tensor table = rope_table(rope_inv_freq(c.hd, 1e4), 40 + c.at, c.T, Device::cpu());
      // The reference, on the CPU.
      Tensor wq = q.clone(), wk = k.clone(), wkc = kc.clone(), wvc = vc.clone();
      rope(wq, c.hd, table);
      rope(wk, c.hd, table);
      const int64_t D = c.nkv * c.hd;
      Tensor wkc4 = wkc.reshape({c.B, 1, c.cap, D}), wvc4 = wvc.reshape({c.B, 1, c.cap, D});
      kv_append(wkc4, wk.reshape({c.B, 1, c.T, D}), c.at);
      kv_append(wvc4, v.reshape({c.B, 1, c.T, D}), c.at);

      Tensor gq = q.to(dev), gk = k.to(dev), gkc = kc.to(dev), gvc = vc.to(dev);
      rope_append(gq, gk, v.to(dev), table.to(dev), gkc, gvc, c.at);
      // Only the rounding of a * c - b * s (fused or not) may differ.
      EXPECT_TRUE(all_close(gq.to(Device::cpu()), wq, 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gk.to(Device::cpu()), wk, 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gkc.to(Device::cpu()), wkc, 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gvc.to(Device::cpu()), wvc, 0, 0));
    }
  }
}

// Under a binding limit the whole cache exceeds, several sequences take the
// composed path and one sequence binds only its slots: both stay exact.
TEST(LlamaParity, RopeAppendWebGpuUnderALoweredBindingLimit) {
  const Device& g = gpu_device();
  LoweredBindingLimit limit(1024);
  for (int64_t B : {1, 2}) {
    SCOPED_TRACE("B " + std::to_string(B));
    const int64_t T = 2, nh = 2, nkv = 1, hd = 8, cap = 200, at = 150;
    Tensor q = random_tensor({B, T, nh, hd}, 7), k = random_tensor({B, T, nkv, hd}, 8), v = random_tensor({B, T, nkv, hd}, 9);
    Tensor kc = Tensor::zeros({B, cap, nkv, hd}), vc = Tensor::zeros({B, cap, nkv, hd});
    const Tensor table = rope_table(rope_inv_freq(hd, 1e4), at, T, Device::cpu());
    Tensor wq = q.clone(), wk = k.clone(), wkc = kc.clone(), wvc = vc.clone();
    rope_append(wq, wk, v, table, wkc, wvc, at);
    Tensor gq = q.to(g), gk = k.to(g), gkc = kc.to(g), gvc = vc.to(g);
    rope_append(gq, gk, v.to(g), table.to(g), gkc, gvc, at);
    EXPECT_TRUE(all_close(gkc.to(Device::cpu()), wkc, 1e-6, 1e-6));
    EXPECT_TRUE(all_close(gvc.to(Device::cpu()), wvc, 0, 0));
    EXPECT_TRUE(all_close(gq.to(Device::cpu()), wq, 1e-6, 1e-6));
  }
}

TEST(LlamaParity, RopeAppendRefusesBadShapes) {
  Tensor q = Tensor::zeros({1, 2, 4, 8}), k = Tensor::zeros({1, 2, 2, 8}), v = Tensor::zeros({1, 2, 2, 8});
  Tensor kc = Tensor::zeros({1, 6, 2, 8}), vc = Tensor::zeros({1, 6, 2, 8});
  const Tensor table = rope_table(rope_inv_freq(8, 1e4), 0, 2, Device::cpu());
  expect_error<ValueError>("rope_append", [&] { rope_append(q, k, v, table, kc, vc, 5); }, "capacity 6");
  expect_error<ValueError>("rope_append", [&] { rope_append(q, k, v, table, kc, vc, -1); });
  Tensor v3 = Tensor::zeros({1, 2, 3, 8});
  expect_error<ShapeError>("rope_append", [&] { rope_append(q, k, v3, table, kc, vc, 0); }, "v must");
  Tensor kc_bad = Tensor::zeros({1, 6, 3, 8});
  expect_error<ShapeError>("rope_append", [&] { rope_append(q, k, v, table, kc_bad, vc, 0); }, "caches");
  const Tensor short_table = rope_table(rope_inv_freq(8, 1e4), 0, 1, Device::cpu());
  expect_error<ShapeError>("rope_append", [&] { rope_append(q, k, v, short_table, kc, vc, 0); }, "table");
}

// The packed form (a prefill's joined q/k/v product): q, k and v read from
// one row a token, against split_columns and rope_append on the CPU; one and
// several sequences, GQA and MHA, slots off the binding alignment.
TEST(LlamaParity, RopeAppendPackedEqualsSplitThenRopeAppendOnEveryDevice) {
  const std::vector<RopeAppendCase> cases = {{1, 1, 4, 2, 8, 16, 5}, {1, 5, 3, 1, 6, 9, 3}, {2, 3, 4, 4, 16, 7, 2},
                                             {3, 2, 5, 1, 4, 33, 31}};
  uint32_t seed = 500;
  for (const Device& dev : test_devices()) {
    for (const RopeAppendCase& c : cases) {
      SCOPED_TRACE(dev.name() + " B" + std::to_string(c.B) + " T" + std::to_string(c.T) + " at" + std::to_string(c.at));
      const int64_t qd = c.nh * c.hd, kd = c.nkv * c.hd;
      const Tensor qkv = random_tensor({c.B, c.T, qd + 2 * kd}, seed++);
      const Tensor kc = random_tensor({c.B, c.cap, c.nkv, c.hd}, seed++), vc = random_tensor({c.B, c.cap, c.nkv, c.hd}, seed++);
      const Tensor table = rope_table(rope_inv_freq(c.hd, 1e4), 40 + c.at, c.T, Device::cpu());
      const std::vector<Tensor> parts = split_columns(qkv.reshape({c.B * c.T, qd + 2 * kd}), {qd, kd, kd});
      Tensor wq = parts[0].reshape({c.B, c.T, c.nh, c.hd}), wk = parts[1].reshape({c.B, c.T, c.nkv, c.hd});
      Tensor wkc = kc.clone(), wvc = vc.clone();
      rope_append(wq, wk, parts[2].reshape({c.B, c.T, c.nkv, c.hd}), table, wkc, wvc, c.at);

      Tensor gkc = kc.to(dev), gvc = vc.to(dev);
      const Tensor gq = rope_append_packed(qkv.to(dev), c.nh, table.to(dev), gkc, gvc, c.at);
      EXPECT_EQ(gq.shape(), wq.shape());
      EXPECT_TRUE(all_close(gq.to(Device::cpu()), wq, 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gkc.to(Device::cpu()), wkc, 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gvc.to(Device::cpu()), wvc, 0, 0));
    }
  }
}

TEST(LlamaParity, RopeAppendPackedRefusesBadShapes) {
  const Tensor qkv = Tensor::zeros({1, 2, 64});  // nh 4, nkv 2, hd 8
  Tensor kc = Tensor::zeros({1, 6, 2, 8}), vc = Tensor::zeros({1, 6, 2, 8});
  const Tensor table = rope_table(rope_inv_freq(8, 1e4), 0, 2, Device::cpu());
  expect_error<ShapeError>("rope_append_packed", [&] { rope_append_packed(qkv, 3, table, kc, vc, 0); },
                           "(nh + 2 * nkv) * hd");
  expect_error<ValueError>("rope_append_packed", [&] { rope_append_packed(qkv, 4, table, kc, vc, 5); }, "capacity 6");
  Tensor kc2 = Tensor::zeros({2, 6, 2, 8}), vc2 = Tensor::zeros({2, 6, 2, 8});
  expect_error<ShapeError>("rope_append_packed", [&] { rope_append_packed(qkv, 4, table, kc2, vc2, 0); }, "qkv's B");
  const Tensor short_table = rope_table(rope_inv_freq(8, 1e4), 0, 1, Device::cpu());
  expect_error<ShapeError>("rope_append_packed", [&] { rope_append_packed(qkv, 4, short_table, kc, vc, 0); }, "table");
}

// The rows form: row i's q and k rotated by table row i (its own position),
// its k and v to row i of the caches at slot at[i], against rope over the
// rows as one sequence and kv_append_rows on the CPU.
TEST(LlamaParity, RopeAppendRowsEqualsRopeThenAppendRowsOnEveryDevice) {
  struct RowsCase {
    int64_t rows, nh, nkv, hd, cap;
    std::vector<int64_t> at;
  };
  const std::vector<RowsCase> cases = {{1, 4, 2, 8, 16, {15}}, {4, 3, 1, 6, 9, {0, 8, 2}}, {3, 5, 5, 4, 7, {6, 6, 1}}};
  uint32_t seed = 300;
  for (const Device& dev : test_devices()) {
    for (const RowsCase& c : cases) {
      const int64_t n = int64_t(c.at.size());
      SCOPED_TRACE(dev.name() + " n " + std::to_string(n) + " of " + std::to_string(c.rows) + " rows");
      Tensor q = random_tensor({n, 1, c.nh, c.hd}, seed++), k = random_tensor({n, 1, c.nkv, c.hd}, seed++);
      const Tensor v = random_tensor({n, 1, c.nkv, c.hd}, seed++);
      const Tensor kc = random_tensor({c.rows, c.cap, c.nkv, c.hd}, seed++), vc = random_tensor({c.rows, c.cap, c.nkv, c.hd}, seed++);
      std::vector<float> tab;  // [n, hd / 2, 2]: row i at position at[i]
      for (int64_t p : c.at) {
        const std::vector<float> r = rope_table(rope_inv_freq(c.hd, 1e4), p, 1, Device::cpu()).to_vector<float>();
        tab.insert(tab.end(), r.begin(), r.end());
      }
      const Tensor table = Tensor::from_vector(tab, {n, c.hd / 2, 2});
      Tensor wq = q.clone().reshape({1, n, c.nh, c.hd}), wk = k.clone().reshape({1, n, c.nkv, c.hd});
      rope(wq, c.hd, table);
      rope(wk, c.hd, table);
      Tensor wkc = kc.clone(), wvc = vc.clone();
      kv_append_rows(wkc, wk.reshape({n, 1, c.nkv, c.hd}), 0, c.at);
      kv_append_rows(wvc, v, 0, c.at);

      Tensor gq = q.to(dev), gk = k.to(dev), gkc = kc.to(dev), gvc = vc.to(dev);
      rope_append_rows(gq, gk, v.to(dev), table.to(dev), gkc, gvc, c.at);
      EXPECT_TRUE(all_close(gq.to(Device::cpu()), wq.reshape({n, 1, c.nh, c.hd}), 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gk.to(Device::cpu()), wk.reshape({n, 1, c.nkv, c.hd}), 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gkc.to(Device::cpu()), wkc, 1e-6, 1e-6));
      EXPECT_TRUE(all_close(gvc.to(Device::cpu()), wvc, 0, 0));
    }
  }
}

TEST(LlamaParity, RopeAppendRowsRefusesBadSlotsAndShapes) {
  Tensor q = Tensor::zeros({2, 1, 4, 8}), k = Tensor::zeros({2, 1, 2, 8}), v = Tensor::zeros({2, 1, 2, 8});
  Tensor kc = Tensor::zeros({3, 6, 2, 8}), vc = Tensor::zeros({3, 6, 2, 8});
  const Tensor table = rope_table(rope_inv_freq(8, 1e4), 0, 2, Device::cpu());
  expect_error<ValueError>("rope_append_rows", [&] { rope_append_rows(q, k, v, table, kc, vc, {1}); },
                           "1 positions for 2 rows");
  expect_error<ValueError>("rope_append_rows", [&] { rope_append_rows(q, k, v, table, kc, vc, {1, 6}); },
                           "row 1 position 6 outside the cache capacity 6");
  Tensor q2 = Tensor::zeros({2, 2, 4, 8}), k2 = Tensor::zeros({2, 2, 2, 8}), v2 = Tensor::zeros({2, 2, 2, 8});
  expect_error<ShapeError>("rope_append_rows", [&] { rope_append_rows(q2, k2, v2, table, kc, vc, {0, 0}); },
                           "one token of each row");
  Tensor kc1 = Tensor::zeros({1, 6, 2, 8}), vc1 = Tensor::zeros({1, 6, 2, 8});
  expect_error<ShapeError>("rope_append_rows", [&] { rope_append_rows(q, k, v, table, kc1, vc1, {0, 0}); },
                           "rows >= n");
  const Tensor short_table = rope_table(rope_inv_freq(8, 1e4), 0, 1, Device::cpu());
  expect_error<ShapeError>("rope_append_rows", [&] { rope_append_rows(q, k, v, short_table, kc, vc, {0, 0}); },
                           "table");
}

// ---- decode-step fusions ------------------------------------------------------

// matmul_transb_many and silu_gate_matmul against the plain ops on the CPU:
// few rows take the fused kernel on WebGPU (K a multiple of 4), others the
// plain ops there too. Tolerance as for matmul (sums in another order).
TEST(LlamaParity, DecodeFusionsEqualThePlainOpsOnEveryDevice) {
  struct Case {
    Shape x;
    int64_t n0, n1, n2;
  };
  const std::vector<Case> cases = {{{1, 64}, 40, 8, 8},     {{1, 1, 132}, 17, 5, 3}, {{3, 260}, 9, 31, 2},
                                   {{4, 8}, 1, 1, 1},       {{6, 64}, 12, 4, 4},     {{2, 30}, 7, 3, 3}};
  uint32_t seed = 300;
  for (const Device& dev : test_devices()) {
    for (const Case& c : cases) {
      SCOPED_TRACE(dev.name() + " x " + shape_str(c.x));
      const int64_t K = c.x.back();
      Tensor x = random_tensor(c.x, seed++), w0 = random_tensor({c.n0, K}, seed++);
      Tensor w1 = random_tensor({c.n1, K}, seed++), w2 = random_tensor({c.n2, K}, seed++);
      Tensor up = random_tensor({c.n0, K}, seed++);
      MatmulOptions o;
      o.transpose_b = true;
      const Tensor x2 = x.reshape({x.numel() / K, K});
      const double atol = 2e-6 * std::sqrt(double(K) + 1);
      std::vector<Tensor> got = matmul_transb_many(x.to(dev), {w0.to(dev), w1.to(dev), w2.to(dev)});
      ASSERT_EQ(got.size(), 3u);
      const Tensor* ws[3] = {&w0, &w1, &w2};
      for (int i = 0; i < 3; ++i) {
        Tensor want = matmul(x2, *ws[i], o);
        Shape s = c.x;
        s.back() = ws[i]->dim(0);
        EXPECT_EQ(got[size_t(i)].shape(), s);
        EXPECT_TRUE(all_close(got[size_t(i)].to(Device::cpu()).reshape(want.shape()), want, atol, 1e-5)) << i;
      }
      Tensor want = silu_gate_fused(matmul(x2, w0, o), matmul(x2, up, o));
      Tensor sg = silu_gate_matmul(x.to(dev), w0.to(dev), up.to(dev));
      EXPECT_TRUE(all_close(sg.to(Device::cpu()).reshape(want.shape()), want, atol, 1e-5));
    }
  }
}

// Weights that are rows of one allocation (as the models load q/k/v and
// gate/up) take one product for many rows, split by columns: the same values
// as a product per weight, on every device.
TEST(LlamaParity, ProductsOverJoinedWeightsEqualOnePerWeight) {
  const int64_t K = 64, rows = 37;  // each weight a whole number of 256-byte rows blocks
  const std::vector<int64_t> outs = {48, 16, 16};
  uint32_t seed = 700;
  for (const Device& dev : test_devices()) {
    SCOPED_TRACE(dev.name());
    const Tensor x = random_tensor({rows, K}, seed++);
    const Tensor all = random_tensor({80, K}, seed++);
    const Tensor joined = all.to(dev);
    std::vector<Tensor> ws = {joined.slice_rows(0, 48), joined.slice_rows(48, 64), joined.slice_rows(64, 80)};
    ASSERT_TRUE(Tensor::joined_rows(ws).defined());
    EXPECT_EQ(Tensor::joined_rows(ws).shape(), (Shape{80, K}));
    MatmulOptions o;
    o.transpose_b = true;
    const double atol = 2e-6 * std::sqrt(double(K) + 1);
    const std::vector<Tensor> got = matmul_transb_many(x.to(dev), ws);
    int64_t at = 0;
    for (size_t i = 0; i < ws.size(); ++i) {
      const Tensor want = matmul(x, all.slice_rows(at, at + outs[i]), o);
      at += outs[i];
      EXPECT_EQ(got[i].shape(), want.shape());
      EXPECT_TRUE(all_close(got[i].to(Device::cpu()), want, atol, 1e-5)) << i;
    }
    const Tensor gate = joined.slice_rows(0, 32), up = joined.slice_rows(32, 64);
    ASSERT_TRUE(Tensor::joined_rows({gate, up}).defined());
    const Tensor want = silu_gate_fused(matmul(x, all.slice_rows(0, 32), o), matmul(x, all.slice_rows(32, 64), o));
    EXPECT_TRUE(all_close(silu_gate_matmul(x.to(dev), gate, up).to(Device::cpu()), want, atol, 1e-5));
  }
}

TEST(LlamaValues, JoinedRowsOnlyForViewsBackToBackInOneStorage) {
  const Tensor a = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  const Tensor j = Tensor::joined_rows({a.slice_rows(0, 1), a.slice_rows(1, 3), a.slice_rows(3, 4)});
  ASSERT_TRUE(j.defined());
  EXPECT_EQ(j.shape(), (Shape{4, 2}));
  EXPECT_EQ(j.to_vector<float>(), a.to_vector<float>());
  EXPECT_FALSE(Tensor::joined_rows({a.slice_rows(1, 3), a.slice_rows(0, 1)}).defined());  // out of order
  EXPECT_FALSE(Tensor::joined_rows({a.slice_rows(0, 1), a.slice_rows(2, 3)}).defined());  // a gap
  EXPECT_FALSE(Tensor::joined_rows({a.slice_rows(0, 2), a.clone().slice_rows(2, 4)}).defined());  // two storages
  EXPECT_FALSE(Tensor::joined_rows({a.slice_rows(0, 2), a.reshape({8}).slice_rows(4, 8)}).defined());  // ranks
  EXPECT_FALSE(Tensor::joined_rows({}).defined());
  EXPECT_TRUE(Tensor::joined_rows({a}).defined());
}

TEST(LlamaParity, DecodeFusionsRefuseBadShapes) {
  Tensor x = Tensor::zeros({1, 8}), w = Tensor::zeros({4, 8}), bad = Tensor::zeros({4, 7});
  expect_error<ShapeError>("matmul_transb_many", [&] { matmul_transb_many(x, {w, bad}); }, "[n, 8]");
  expect_error<ValueError>("matmul_transb_many", [&] { matmul_transb_many(x, {}); });
  expect_error<ValueError>("matmul_transb_many", [&] { matmul_transb_many(x, {w, w, w, w}); });
  expect_error<ShapeError>("silu_gate_matmul", [&] { silu_gate_matmul(x, w, Tensor::zeros({3, 8})); }, "one shape");
  expect_error<ShapeError>("silu_gate_matmul", [&] { silu_gate_matmul(x, bad, bad); });
}
