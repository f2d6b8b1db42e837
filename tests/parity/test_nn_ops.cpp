// Parity, values and validation for the nn ops (forge/ops/nn.h): every op on
// the CPU and on WebGPU over shapes with odd sizes, tolerances stated per op.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "parity/parity.h"

using namespace forge;
using namespace forge::testing;

namespace {

const std::vector<Shape> kElementwiseShapes = {{1}, {3}, {17}, {129}, {3, 17}, {2, 3, 129}, {1000, 3}};
// Row-wise ops: rows of 1, 3, 17, 129, 300 (> one workgroup) values.
const std::vector<Shape> kRowShapes = {{1}, {3}, {17, 1}, {3, 17}, {17, 129}, {2, 3, 129}, {5, 300}, {1, 1, 768},
                                       {130, 24}};

// ---- Elementwise and activations -----------------------------------------

TEST(NnParity, MulSub) {
  uint32_t seed = 1;
  for (const Shape& s : kElementwiseShapes) {
    std::vector<Tensor> in{random_tensor(s, seed++), random_tensor(s, seed++)};
    // One correctly rounded f32 operation: exact.
    EXPECT_TRUE(cpu_gpu_parity(in, [](auto& t) { return mul(t[0], t[1]); }, 0, 0)) << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity(in, [](auto& t) { return sub(t[0], t[1]); }, 0, 0)) << shape_str(s);
  }
}

TEST(NnParity, Activations) {
  uint32_t seed = 20;
  for (const Shape& s : kElementwiseShapes) {
    Tensor x = random_tensor(s, seed++, -5.0f, 5.0f);
    Tensor dy = random_tensor(s, seed++);
    // relu and its gradient select or copy values: exact.
    EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return relu(t[0]); }, 0, 0)) << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return relu_bwd(t[0], t[1]); }, 0, 0)) << shape_str(s);
    // gelu, silu: the CPU rounds a double evaluation once; the GPU's f32 exp
    // of an argument up to ~12 in size loses ~|arg| ulps: 2e-6 absolute plus
    // 5e-6 relative.
    EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return gelu(t[0]); }, 2e-6, 5e-6)) << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return silu(t[0]); }, 2e-6, 5e-6)) << shape_str(s);
    // The gradients add two such terms that partly cancel: 5e-6 + 1e-5 relative.
    EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return gelu_bwd(t[0], t[1]); }, 5e-6, 1e-5))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return silu_bwd(t[0], t[1]); }, 5e-6, 1e-5))
        << shape_str(s);
  }
}

TEST(NnValues, ActivationsKnownPoints) {
  // gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.8411920, gelu(-1) =
  // -0.1588080; silu(1) = 0.7310586; tolerance 1e-6.
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor x = Tensor::from_vector<float>({1, -1, 0, 30, -30}, {5}, d);
    EXPECT_TRUE(all_close(gelu(x).to_vector<float>(), {0.8411920f, -0.1588080f, 0, 30, 0}, 1e-6, 0)) << d.name();
    EXPECT_TRUE(all_close(silu(x).to_vector<float>(), {0.7310586f, -0.2689414f, 0, 30, -2.8e-12f}, 1e-6, 0))
        << d.name();
    EXPECT_EQ(relu(x).to_vector<float>(), (std::vector<float>{1, 0, 0, 30, 0})) << d.name();
    Tensor ones = Tensor::from_vector<float>({1, 1, 1, 1, 1}, {5}, d);
    // gelu'(0) = 0.5, gelu'(30) = 1, gelu'(-30) = 0; silu'(0) = 0.5.
    auto g = gelu_bwd(x, ones).to_vector<float>();
    EXPECT_TRUE(all_close({g[2], g[3], g[4]}, {0.5f, 1, 0}, 1e-6, 0)) << d.name();
    auto s = silu_bwd(x, ones).to_vector<float>();
    EXPECT_NEAR(s[2], 0.5f, 1e-7) << d.name();
    // relu'(0) is taken as 0.
    EXPECT_EQ(relu_bwd(x, ones).to_vector<float>(), (std::vector<float>{1, 0, 0, 1, 0})) << d.name();
  }
}

// ---- Layer norm and softmax gradient ------------------------------------

TEST(NnParity, LayerNorm) {
  // Both row layouts (130 rows: three workgroups of them at SwiftShader's 4
  // lanes a subgroup, the last part past the rows).
  for (const ReduceForm& form : reduce_forms()) {
    RowLayoutScope layout(form);
    SCOPED_TRACE(form.name);
    uint32_t seed = 100;
    for (const Shape& s : kRowShapes) {
      int64_t c = s.back();
      Tensor x = random_tensor(s, seed++, -2.0f, 3.0f);
      Tensor gamma = random_tensor({c}, seed++, 0.5f, 1.5f);
      Tensor beta = random_tensor({c}, seed++);
      Tensor dy = random_tensor(s, seed++);
      // Forward: f32 row reductions on the GPU vs double on the CPU; outputs
      // are O(3): 1e-5 absolute and relative.
      EXPECT_TRUE(cpu_gpu_parity({x, gamma, beta}, [](auto& t) { return layernorm(t[0], t[1], t[2], 1e-5f); },
                                 1e-5, 1e-5))
          << shape_str(s);
      // dx: three f32 row reductions, 3e-5 absolute; dgamma/dbeta sum `rows`
      // terms: 1e-5 (1 + sqrt(rows)) absolute, 1e-5 relative.
      int64_t rows = numel(s) / c;
      double sum_atol = 1e-5 * (1 + std::sqrt(double(rows)));
      EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dx; }, 3e-5,
                                 1e-5))
          << shape_str(s);
      EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dgamma; },
                                 sum_atol, 1e-5))
          << shape_str(s);
      EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dbeta; },
                                 sum_atol, 1e-5))
          << shape_str(s);
      // With dx_add: dx_add + the norm's dx, on every device as add gives it.
      const Tensor r = random_tensor(s, seed++);
      EXPECT_TRUE(cpu_gpu_parity(
          {x, gamma, dy, r}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2], 1e-5f, &t[3]).dx; }, 3e-5, 1e-5))
          << shape_str(s);
      for (const Device& dev : test_devices()) {
        const Tensor X = x.to(dev), G = gamma.to(dev), DY = dy.to(dev), R = r.to(dev);
        const LayerNormGrads plain = layernorm_bwd(X, G, DY), joined = layernorm_bwd(X, G, DY, 1e-5f, &R);
        EXPECT_TRUE(all_close(joined.dx.to(Device::cpu()), add(R, plain.dx).to(Device::cpu()), 1e-6, 1e-6))
            << dev.name() << " " << shape_str(s);
        EXPECT_TRUE(all_close(joined.dgamma.to(Device::cpu()), plain.dgamma.to(Device::cpu()), 0, 0));
      }
    }
  }
}

TEST(NnValues, LayerNormMatchesHandValues) {
  // x = [1, 2, 3, 4]: mean 2.5, biased var 1.25; gamma 2, beta 1:
  // y = (x - 2.5) / sqrt(1.25 + eps) * 2 + 1; tolerance 1e-6.
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4}, d);
    Tensor g = Tensor::from_vector<float>({2, 2, 2, 2}, {4}, d);
    Tensor b = Tensor::from_vector<float>({1, 1, 1, 1}, {4}, d);
    double r = 1 / std::sqrt(1.25 + 1e-5);
    std::vector<float> want;
    for (double v : {1.0, 2.0, 3.0, 4.0}) want.push_back(float((v - 2.5) * r * 2 + 1));
    EXPECT_TRUE(all_close(layernorm(x, g, b).to_vector<float>(), want, 1e-6, 0)) << d.name();
  }
}

TEST(NnParity, SoftmaxBwd) {
  uint32_t seed = 200;
  for (const Shape& s : kRowShapes) {
    for (bool causal : {false, true}) {
      SoftmaxOptions o;
      o.causal = causal;
      Tensor y = softmax(random_tensor(s, seed++, -4.0f, 4.0f), o);
      Tensor dy = random_tensor(s, seed++);
      // One f32 dot product per row (values <= 1): 1e-6 absolute, 1e-5 relative.
      EXPECT_TRUE(cpu_gpu_parity({y, dy}, [](auto& t) { return softmax_bwd(t[0], t[1]); }, 1e-6, 1e-5))
          << shape_str(s) << " causal " << causal;
      // The same with the mask given (only the visible part read).
      EXPECT_TRUE(cpu_gpu_parity({y, dy}, [&](auto& t) { return softmax_bwd(t[0], t[1], o); }, 1e-6, 1e-5))
          << shape_str(s) << " causal " << causal << ", mask given";
    }
  }
}

// Given the causal mask, dy's masked entries are never read (NaN there
// changes nothing) and dx equals the unmasked gradient to the bit: the
// masked y are zeros, which add nothing to a row's sum.
TEST(NnValues, SoftmaxBwdCausalMaskReadsOnlyTheVisiblePart) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    for (const SoftmaxOptions& o : {SoftmaxOptions{true, 0, 0}, SoftmaxOptions{true, 5, 4}}) {
      const Shape s{2, 3, 5, 9};
      Tensor y = softmax(random_tensor(s, 31, -4.0f, 4.0f).to(d), o);
      std::vector<float> g = random_tensor(s, 32).to_vector<float>(), masked = g;
      const int64_t cols = 9, q_len = o.q_len ? o.q_len : 5;
      for (int64_t i = 0; i < int64_t(g.size()); ++i)
        if (i % cols > (i / cols) % q_len + o.key_offset) masked[size_t(i)] = std::nanf("");
      Tensor want = softmax_bwd(y, Tensor::from_vector(g, s, d));
      Tensor got = softmax_bwd(y, Tensor::from_vector(masked, s, d), o);
      EXPECT_TRUE(all_close(got, want, 0, 0)) << d.name() << " key_offset " << o.key_offset;
    }
  }
}

TEST(NnValues, SoftmaxBwdKeepsMaskedZeros) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    SoftmaxOptions o;
    o.causal = true;
    Tensor y = softmax(random_tensor({4, 4}, 3).to(d), o);
    Tensor dy = random_tensor({4, 4}, 4).to(d);
    auto dx = softmax_bwd(y, dy).to_vector<float>();
    for (int r = 0; r < 4; ++r)
      for (int c = r + 1; c < 4; ++c) EXPECT_EQ(dx[r * 4 + c], 0.0f) << d.name() << " " << r << "," << c;
    // Each row of dx sums to zero (the softmax Jacobian's rows do): 1e-6.
    for (int r = 0; r < 4; ++r) EXPECT_NEAR(dx[r * 4] + dx[r * 4 + 1] + dx[r * 4 + 2] + dx[r * 4 + 3], 0, 1e-6);
  }
}

// dgamma and dbeta come from one pair of column-sum passes over dy * xhat and
// dy: many row blocks (1,000 rows: 15 blocks of partials), and rows split
// under a lowered binding limit, the later chunks adding into the partials.
TEST(NnParity, LayerNormWeightGradientsOverRowBlocksAndChunks) {
  const Shape s = {1000, 40};
  Tensor x = random_tensor(s, 510, -2.0f, 3.0f), gamma = random_tensor({40}, 511, 0.5f, 1.5f);
  Tensor dy = random_tensor(s, 512);
  const double atol = 1e-5 * (1 + std::sqrt(1000.0));
  for (uint64_t limit : {uint64_t(0), uint64_t(256 * 40 * 4)}) {
    SCOPED_TRACE(limit);
    std::optional<LoweredBindingLimit> lowered;
    if (limit) lowered.emplace(limit);
    EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dgamma; }, atol,
                               1e-5));
    EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dbeta; }, atol,
                               1e-5));
  }
  // dbeta is the column sum of dy, whatever x and gamma are.
  const Tensor ones = Tensor::from_vector<float>(std::vector<float>(3 * 130, 1.0f), {130, 3}, gpu_device());
  const Tensor g = Tensor::from_vector<float>({1, 2, 3}, {3}, gpu_device());
  const LayerNormGrads lg = layernorm_bwd(random_tensor({130, 3}, 513).to(gpu_device()), g, ones);
  EXPECT_EQ(lg.dbeta.to_vector<float>(), (std::vector<float>{130, 130, 130}));
}

// ---- Reductions ----------------------------------------------------------

TEST(NnParity, SumRows) {
  // Tall shapes take the two-pass path with several row blocks.
  std::vector<Shape> shapes = {{1}, {3}, {17, 1}, {3, 17}, {129, 3}, {2, 3, 129}, {5000, 3}, {300, 129}, {4097, 1}};
  uint32_t seed = 300;
  for (const Shape& s : shapes) {
    int64_t rows = numel(s) / s.back();
    // f32 sums of `rows` values in [-1, 1) in another order than the CPU's
    // double: 2e-6 sqrt(rows) absolute + 1e-5 relative.
    EXPECT_TRUE(cpu_gpu_parity({random_tensor(s, seed++)}, [](auto& t) { return sum_rows(t[0]); },
                               2e-6 * (1 + std::sqrt(double(rows))), 1e-5))
        << shape_str(s);
  }
  EXPECT_EQ(sum_rows(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}, gpu_device())).to_vector<float>(),
            (std::vector<float>{9, 12}));
}

TEST(NnParity, SumSq) {
  uint32_t seed = 400;
  for (const Shape& s : {Shape{1}, Shape{3}, Shape{17, 129}, Shape{2, 3, 129}, Shape{100003}}) {
    Tensor x = random_tensor(s, seed++);
    double want = 0;
    for (float v : x.to_vector<float>()) want += double(v) * v;
    // f32 partial sums: 1e-5 relative.
    EXPECT_NEAR(sumsq(x), want, 1e-6 * want) << shape_str(s);  // CPU: double, rounded once
    Tensor g = x.to(gpu_device());
    EXPECT_NEAR(sumsq(g), want, 1e-5 * want) << shape_str(s);
    Tensor t = sumsq_tensor(g);
    EXPECT_TRUE(t.device().is_webgpu());
    EXPECT_EQ(t.shape(), Shape{1});
    EXPECT_NEAR(t.to_vector<float>()[0], want, 1e-5 * want) << shape_str(s);
  }
  EXPECT_EQ(sumsq(Tensor::from_vector<float>({3, 4}, {2}, gpu_device())), 25.0f);
  EXPECT_EQ(sumsq(Tensor::zeros({0}, DType::F32, gpu_device())), 0.0f);
}

// ---- Dropout -------------------------------------------------------------

TEST(NnParity, DropoutMasksBitIdentical) {
  uint32_t seed = 500;
  for (const Shape& s : kElementwiseShapes) {
    for (float p : {0.1f, 0.5f, 0.9f}) {
      // One integer hash and one f32 multiply: exact.
      EXPECT_TRUE(cpu_gpu_parity({random_tensor(s, seed++)}, [&](auto& t) { return dropout(t[0], p, 1234567); },
                                 0, 0))
          << shape_str(s) << " p " << p;
    }
  }
  // A seed with both words set.
  EXPECT_TRUE(cpu_gpu_parity({random_tensor({3, 129}, 7)},
                             [](auto& t) { return dropout(t[0], 0.3f, 0xDEADBEEF12345678ull); }, 0, 0));
}

TEST(NnValues, DropoutKeepRateAndScale) {
  const int64_t n = 200000;
  const float p = 0.3f;
  Tensor x = Tensor::from_vector(std::vector<float>(size_t(n), 1.0f), {n});
  auto y = dropout(x, p, 42).to_vector<float>();
  const float scale = float(1.0 / (1.0 - double(p)));
  int64_t kept = 0;
  for (float v : y) {
    ASSERT_TRUE(v == 0.0f || v == scale) << v;
    kept += v != 0.0f;
  }
  // Binomial(n, 0.7): standard deviation sqrt(n p (1 - p)) ~ 205; allow 5.
  double sd = std::sqrt(double(n) * p * (1 - p));
  EXPECT_NEAR(double(kept), n * (1 - p), 5 * sd);
  // Another seed gives another mask; the same seed the same one.
  EXPECT_NE(dropout(x, p, 43).to_vector<float>(), y);
  EXPECT_EQ(dropout(x, p, 42).to_vector<float>(), y);
  // The backward (the same call on dy) zeroes the same elements.
  Tensor dy = random_tensor({n}, 9, 0.5f, 1.0f);
  auto dx = dropout(dy, p, 42).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(dx[size_t(i)] == 0.0f, y[size_t(i)] == 0.0f) << i;
}

TEST(NnValues, DropoutZeroIsIdentity) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor x = random_tensor({3, 17}, 11).to(d);
    Tensor y = dropout(x, 0.0f, 5);
    EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>()) << d.name();
  }
}

// ---- AdamW ---------------------------------------------------------------

struct AdamRef {
  std::vector<double> p, m, v;
};

// torch.optim.AdamW's update, in double.
void adamw_ref(AdamRef& s, const std::vector<float>& g, double lr, double b1, double b2, double eps, double wd,
               int step) {
  double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  for (size_t i = 0; i < s.p.size(); ++i) {
    s.p[i] *= 1 - lr * wd;
    s.m[i] = b1 * s.m[i] + (1 - b1) * g[i];
    s.v[i] = b2 * s.v[i] + (1 - b2) * double(g[i]) * g[i];
    double denom = std::sqrt(s.v[i]) / std::sqrt(bc2) + eps;
    s.p[i] -= lr / bc1 * s.m[i] / denom;
  }
}

std::vector<float> to_f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }

TEST(NnValues, AdamWMatchesDoubleReference) {
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{3, 129}}) {
    const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
    std::vector<float> p0 = random_values(numel(s), 1);
    AdamRef ref{{p0.begin(), p0.end()}, std::vector<double>(p0.size()), std::vector<double>(p0.size())};
    std::vector<Device> devices{Device::cpu(), gpu_device()};
    std::vector<Tensor> param, m, v;
    for (const Device& d : devices) {
      param.push_back(Tensor::from_vector(p0, s, d));
      m.push_back(Tensor::zeros(s, DType::F32, d));
      v.push_back(Tensor::zeros(s, DType::F32, d));
    }
    for (int step = 1; step <= 5; ++step) {
      std::vector<float> g = random_values(numel(s), 100 + uint32_t(step));
      adamw_ref(ref, g, lr, b1, b2, eps, wd, step);
      for (size_t k = 0; k < devices.size(); ++k)
        adamw(param[k], Tensor::from_vector(g, s, devices[k]), m[k], v[k], lr, b1, b2, eps, wd, step);
    }
    for (size_t k = 0; k < devices.size(); ++k) {
      // Five f32 steps against double: updates are ~lr = 1e-2 in size, each
      // with a few ulps of error; 1e-6 absolute and relative.
      EXPECT_TRUE(all_close(param[k].to_vector<float>(), to_f32(ref.p), 1e-6, 1e-6)) << devices[k].name();
      EXPECT_TRUE(all_close(m[k].to_vector<float>(), to_f32(ref.m), 1e-7, 1e-6)) << devices[k].name();
      EXPECT_TRUE(all_close(v[k].to_vector<float>(), to_f32(ref.v), 1e-9, 1e-6)) << devices[k].name();
    }
    // Both backends evaluate the same f32 formula, but a GPU's sqrt and division
    // need not be correctly rounded (WGSL allows 2.5 ulp for division); after
    // five steps an NVIDIA GPU was seen 3 ulps from the CPU. 8 ulps at 1.0 relative.
    EXPECT_TRUE(all_close(param[1].to_vector<float>(), param[0].to_vector<float>(), 0, 1e-6)) << shape_str(s);
  }
}

// ---- Chunked execution under a lowered binding limit --------------------

TEST(NnChunked, ElementwiseOpsUnderLoweredBindingLimit) {
  LoweredBindingLimit limit(4096);  // 1024 floats per binding
  Tensor x = random_tensor({3, 1001}, 1, -4.0f, 4.0f), dy = random_tensor({3, 1001}, 2);
  EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return mul(t[0], t[1]); }, 0, 0));
  EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return sub(t[0], t[1]); }, 0, 0));
  EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return relu(t[0]); }, 0, 0));
  EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return gelu(t[0]); }, 2e-6, 5e-6));
  EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return silu(t[0]); }, 2e-6, 5e-6));
  EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return gelu_bwd(t[0], t[1]); }, 5e-6, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return silu_bwd(t[0], t[1]); }, 5e-6, 1e-5));
  EXPECT_TRUE(cpu_gpu_parity({x, dy}, [](auto& t) { return relu_bwd(t[0], t[1]); }, 0, 0));
  // The mask follows the flat index, not the dispatch: exact.
  EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return dropout(t[0], 0.4f, 77); }, 0, 0));
  // sumsq over 3003 values in 3 dispatches accumulating into the partials.
  double want = 0;
  for (float v : x.to_vector<float>()) want += double(v) * v;
  EXPECT_NEAR(sumsq(x.to(gpu_device())), want, 1e-5 * want);
  // AdamW in place over 3 dispatches: the same f32 formula, 2.5e-7 relative.
  std::vector<Tensor> cpu_state{x.clone(), dy, Tensor::zeros(x.shape()), Tensor::zeros(x.shape())};
  std::vector<Tensor> gpu_state;
  for (auto& t : cpu_state) gpu_state.push_back(t.to(gpu_device()));
  for (auto* st : {&cpu_state, &gpu_state})
    for (int step = 1; step <= 2; ++step)
      adamw((*st)[0], (*st)[1], (*st)[2], (*st)[3], 1e-3, 0.9, 0.999, 1e-8, 0.01, step);
  for (int k : {0, 2, 3})
    EXPECT_TRUE(all_close(gpu_state[k].to_vector<float>(), cpu_state[k].to_vector<float>(), 1e-12, 2.5e-7)) << k;
}

TEST(NnChunked, RowOpsUnderLoweredBindingLimit) {
  // 8 KiB bindings: rows of 17 floats go 64 rows (4352 bytes) per dispatch,
  // rows of 40 floats 48 rows per dispatch (starts 256-byte aligned).
  LoweredBindingLimit limit(8192);
  uint32_t seed = 900;
  for (const Shape& s : {Shape{300, 17}, Shape{2, 50, 40}}) {
    int64_t c = s.back();
    Tensor x = random_tensor(s, seed++, -2.0f, 3.0f), dy = random_tensor(s, seed++);
    Tensor gamma = random_tensor({c}, seed++, 0.5f, 1.5f), beta = random_tensor({c}, seed++);
    EXPECT_TRUE(cpu_gpu_parity({x, gamma, beta}, [](auto& t) { return layernorm(t[0], t[1], t[2]); }, 1e-5, 1e-5))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dx; }, 3e-5,
                               1e-5))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dgamma; },
                               2e-4, 1e-5))
        << shape_str(s);
    EXPECT_TRUE(cpu_gpu_parity({x, gamma, dy}, [](auto& t) { return layernorm_bwd(t[0], t[1], t[2]).dbeta; },
                               2e-4, 1e-5))
        << shape_str(s);
    Tensor y = softmax(x);
    EXPECT_TRUE(cpu_gpu_parity({y, dy}, [](auto& t) { return softmax_bwd(t[0], t[1]); }, 1e-6, 1e-5))
        << shape_str(s);
    // Column sums over several dispatches accumulating into the partials.
    EXPECT_TRUE(cpu_gpu_parity({x}, [](auto& t) { return sum_rows(t[0]); }, 2e-4, 1e-5)) << shape_str(s);
  }
  // 5000 rows of one value: 3 dispatches of rows, 64 row blocks.
  EXPECT_TRUE(cpu_gpu_parity({random_tensor({5000, 1}, 3)}, [](auto& t) { return sum_rows(t[0]); }, 2e-4, 1e-5));
  // A row larger than the limit cannot be split.
  Tensor wide = Tensor::zeros({2, 3000}, DType::F32, gpu_device());
  Tensor g = Tensor::zeros({3000}, DType::F32, gpu_device());
  expect_error<DeviceError>("layernorm", [&] { layernorm(wide, g, g).to_f32(); });
  expect_error<DeviceError>("softmax_bwd", [&] { softmax_bwd(wide, wide).to_f32(); });
}

// ---- Validation ----------------------------------------------------------

TEST(NnValidation, ElementwiseAndActivations) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2}), i32 = Tensor::zeros({2, 3}, DType::I32);
  Tensor g = Tensor::zeros({2, 3}, DType::F32, gpu_device());
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  std::vector<std::pair<std::string, Binary>> binaries = {{"mul", mul},           {"sub", sub},
                                                          {"gelu_bwd", gelu_bwd}, {"relu_bwd", relu_bwd},
                                                          {"silu_bwd", silu_bwd},
                                                          {"softmax_bwd", [](const Tensor& y, const Tensor& dy) {
                                                             return softmax_bwd(y, dy);
                                                           }}};
  for (auto& [name, f] : binaries) {
    expect_error<ShapeError>(name, [&] { f(a, b); }, "[2, 3]");
    expect_error<DTypeError>(name, [&] { f(a, i32); }, "i32");
    expect_error<DeviceError>(name, [&] { f(a, g); });
  }
  expect_error<ShapeError>("mul", [&] { mul(a, b); }, "a f32[2, 3] on cpu, b f32[3, 2] on cpu");
  using Unary = Tensor (*)(const Tensor&);
  std::vector<std::pair<std::string, Unary>> unaries = {{"gelu", gelu}, {"relu", relu}, {"silu", silu},
                                                        {"sum_rows", sum_rows}, {"sumsq", sumsq_tensor}};
  for (auto& [name, f] : unaries) expect_error<DTypeError>(name, [&] { f(i32); }, "i32[2, 3]");
  expect_error<DTypeError>("sumsq", [&] { sumsq(i32); });
  expect_error<ShapeError>("sum_rows", [&] { sum_rows(Tensor::zeros({})); });
  expect_error<ShapeError>("softmax_bwd", [&] { softmax_bwd(Tensor::zeros({}), Tensor::zeros({})); });
  EXPECT_THROW(gelu(Tensor()), Error);
}

TEST(NnValidation, LayerNorm) {
  Tensor x = Tensor::zeros({2, 768}), gamma = Tensor::zeros({768}), bad = Tensor::zeros({767});
  expect_error<ShapeError>("layernorm", [&] { layernorm(x, bad, gamma); },
                           "gamma must be [768], got f32[767] on cpu");
  expect_error<ShapeError>("layernorm", [&] { layernorm(x, gamma, bad); }, "beta must be [768]");
  expect_error<ShapeError>("layernorm", [&] { layernorm(x, Tensor::zeros({1, 768}), gamma); }, "[1, 768]");
  expect_error<DTypeError>("layernorm", [&] { layernorm(x, Tensor::zeros({768}, DType::I32), gamma); });
  expect_error<DTypeError>("layernorm", [&] { layernorm(Tensor::zeros({2, 768}, DType::U32), gamma, gamma); });
  expect_error<DeviceError>("layernorm", [&] { layernorm(x, gamma.to(gpu_device()), gamma); });
  expect_error<ValueError>("layernorm", [&] { layernorm(x, gamma, gamma, -1.0f); });
  expect_error<ShapeError>("layernorm", [&] { layernorm(Tensor::zeros({}), Tensor::zeros({1}), Tensor::zeros({1})); });
  expect_error<ShapeError>("layernorm_bwd", [&] { layernorm_bwd(x, bad, x); }, "gamma must be [768]");
  expect_error<ShapeError>("layernorm_bwd", [&] { layernorm_bwd(x, gamma, Tensor::zeros({3, 768})); }, "[3, 768]");
  expect_error<DTypeError>("layernorm_bwd", [&] { layernorm_bwd(x, gamma, Tensor::zeros({2, 768}, DType::I32)); });
  expect_error<DeviceError>("layernorm_bwd", [&] { layernorm_bwd(x, gamma, x.to(gpu_device())); });
  expect_error<ValueError>("layernorm_bwd", [&] { layernorm_bwd(x, gamma, x, -1.0f); });
  const Tensor short_add = Tensor::zeros({3, 768});
  expect_error<ShapeError>("layernorm_bwd", [&] { layernorm_bwd(x, gamma, x, 1e-5f, &short_add); }, "dx_add");
  const Tensor int_add = Tensor::zeros({2, 768}, DType::I32);
  expect_error<DTypeError>("layernorm_bwd", [&] { layernorm_bwd(x, gamma, x, 1e-5f, &int_add); });
  const Tensor gpu_add = x.to(gpu_device());
  expect_error<DeviceError>("layernorm_bwd", [&] { layernorm_bwd(x, gamma, x, 1e-5f, &gpu_add); });
}

TEST(NnValidation, Dropout) {
  Tensor x = Tensor::zeros({2, 3});
  for (float p : {-0.1f, 1.0f, 1.5f, NAN})
    expect_error<ValueError>("dropout", [&] { dropout(x, p, 1); }, "[2, 3]");
  expect_error<DTypeError>("dropout", [&] { dropout(Tensor::zeros({2}, DType::I32), 0.5f, 1); });
}

TEST(NnValidation, AdamW) {
  Tensor p = Tensor::zeros({3}), g = Tensor::zeros({3}), m = Tensor::zeros({3}), v = Tensor::zeros({3});
  Tensor short_m = Tensor::zeros({2});
  expect_error<ShapeError>("adamw", [&] { adamw(p, g, short_m, v, 1e-3, 0.9, 0.999, 1e-8, 0, 1); },
                           "m f32[2] on cpu");
  Tensor i32 = Tensor::zeros({3}, DType::I32);
  expect_error<DTypeError>("adamw", [&] { adamw(p, i32, m, v, 1e-3, 0.9, 0.999, 1e-8, 0, 1); });
  Tensor gg = g.to(gpu_device());
  expect_error<DeviceError>("adamw", [&] { adamw(p, gg, m, v, 1e-3, 0.9, 0.999, 1e-8, 0, 1); });
  expect_error<ValueError>("adamw", [&] { adamw(p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0, 0); }, "step");
  expect_error<ValueError>("adamw", [&] { adamw(p, g, m, v, 1e-3, 1.0, 0.999, 1e-8, 0, 1); }, "beta1");
  expect_error<ValueError>("adamw", [&] { adamw(p, g, m, v, 1e-3, 0.9, -0.1, 1e-8, 0, 1); }, "beta2");
  expect_error<ValueError>("adamw", [&] { adamw(p, g, m, v, -1e-3, 0.9, 0.999, 1e-8, 0, 1); }, "lr");
  expect_error<ValueError>("adamw", [&] { adamw(p, g, m, v, 1e-3, 0.9, 0.999, -1, 0, 1); }, "eps");
  expect_error<ValueError>("adamw", [&] { adamw(p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, -0.1, 1); }, "weight_decay");
}

}  // namespace
