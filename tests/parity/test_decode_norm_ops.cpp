// The decode-step fusions of a norm and a residual into the products around
// them (RowNorm, MatmulOptions::norm / residual, matmul_transb_many,
// silu_gate_matmul and matmul_chunked_transb with a norm): on every device
// they equal the plain ops on the CPU (rms_norm, then the product, then add).
// WebGPU fuses few rows against aligned weights, f32 or bf16, and composes
// the rest, so the table holds both. Tolerance as for matmul (sums in
// another order) plus the norm's scale, formed by another reduction.
#include <cmath>

#include "decode_fusion_cases.h"

namespace forge::testing {
namespace {

Tensor product(const Tensor& x, const Tensor& w, const Tensor* bias = nullptr) {
  MatmulOptions o;
  o.transpose_b = true;
  o.bias = bias;
  return matmul(x, w, o);
}

TEST(DecodeNormParity, MatmulWithNormResidualAndBiasEqualsThePlainOps) {
  for (const ReduceForm& form : reduce_forms()) {
    ReduceFormScope form_scope(form);
    SCOPED_TRACE(form.name);
    uint32_t seed = 700;
    // Each weight dtype in both of matvec_vec4.wgsl's column counts a
    // workgroup (4 of 64 lanes, 8 of 32), forced.
    const std::vector<std::pair<DType, const char*>> settings{
        {DType::F32, "4"}, {DType::BF16, "4"}, {DType::F32, "8"}, {DType::BF16, "8"}};
    for (const auto& [dt, cols] : settings) {
      ScopedEnv cols_env("FORGE_MATVEC_COLS", cols);
      for (const Device& dev : test_devices()) {
        for (const DecodeFusionCase& c : kDecodeFusionCases) {
          SCOPED_TRACE(dev.name() + " " + dtype_name(dt) + " " + cols + " columns m " + std::to_string(c.m) +
                       " k " + std::to_string(c.k));
          Tensor x = random_tensor({c.m, c.k}, seed++, -2.0f, 2.0f);
          Tensor w = weight_as(random_tensor({c.n, c.k}, seed++), dt);
          Tensor nw = random_tensor({c.k}, seed++, 0.5f, 1.5f), bias = random_tensor({c.n}, seed++);
          Tensor r = random_tensor({c.m, c.n}, seed++);
          const float eps = 1e-5f;
          const Tensor h = rms_norm(x, nw, eps);
          const Tensor wd = dt == DType::BF16 ? bf16_to_f32(w) : w;
          const Tensor want_norm = product(h, wd);
          const Tensor want_all = add(r, product(h, wd, &bias));
          const Tensor want_res = add(r, product(x, wd));
          const Tensor X = x.to(dev), W = w.to(dev), NW = nw.to(dev), BIAS = bias.to(dev), R = r.to(dev);
          const RowNorm norm{&NW, eps};
          MatmulOptions o;
          o.transpose_b = true;
          o.norm = &norm;
          const double atol = decode_fusion_tolerance(c.k);
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_norm, atol, 1e-5)) << "norm";
          o.bias = &BIAS;
          o.residual = &R;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_all, atol, 1e-5)) << "norm, bias, residual";
          o.norm = nullptr;
          o.bias = nullptr;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_res, atol, 1e-5)) << "residual";
          EXPECT_TRUE(all_close(row_norm(X, norm).to(Device::cpu()), h, 1e-6, 1e-6)) << "row_norm";
        }
      }
    }
  }
}

TEST(DecodeNormParity, FusedProductsWithNormEqualThePlainOps) {
  for (const ReduceForm& form : reduce_forms()) {
    ReduceFormScope form_scope(form);
    SCOPED_TRACE(form.name);
    uint32_t seed = 800;
    for (DType dt : {DType::F32, DType::BF16}) {
      for (const Device& dev : test_devices()) {
        for (const DecodeFusionCase& c : kDecodeFusionCases) {
          SCOPED_TRACE(dev.name() + " " + dtype_name(dt) + " m " + std::to_string(c.m) + " k " + std::to_string(c.k));
          Tensor x = random_tensor({c.m, c.k}, seed++, -2.0f, 2.0f), nw = random_tensor({c.k}, seed++, 0.5f, 1.5f);
          std::vector<Tensor> ws;
          for (int64_t n : {c.n, c.n / 2 + 1, 3L}) ws.push_back(weight_as(random_tensor({n, c.k}, seed++), dt));
          const Tensor up = weight_as(random_tensor({c.n, c.k}, seed++), dt);
          const float eps = 1e-6f;
          const Tensor h = rms_norm(x, nw, eps);
          auto wide = [&](const Tensor& w) { return dt == DType::BF16 ? bf16_to_f32(w) : w; };
          const Tensor NW = nw.to(dev);
          const RowNorm norm{&NW, eps};
          std::vector<Tensor> wd;
          for (const Tensor& w : ws) wd.push_back(w.to(dev));
          const std::vector<Tensor> got = matmul_transb_many(x.to(dev), wd, &norm);
          const double atol = decode_fusion_tolerance(c.k);
          ASSERT_EQ(got.size(), 3u);
          for (size_t i = 0; i < 3; ++i)
            EXPECT_TRUE(all_close(got[i].to(Device::cpu()), product(h, wide(ws[i])), atol, 1e-5)) << i;
          const Tensor a = product(h, wide(ws[0])), b = product(h, wide(up));
          const Tensor want = silu_gate_fused(a, b);
          const Tensor sg = silu_gate_matmul(x.to(dev), wd[0], up.to(dev), &norm);
          // silu(a) * b carries each product's error times the other factor:
          // |silu'| <= 1.1, so the bound is atol * (1.1 |b| + |silu(a)|) + 1e-5 |want|
          // (the H200 gave 9.7e-5 at b = 5 where a flat atol allowed 6.9e-5).
          const std::vector<float> g = sg.to(Device::cpu()).to_vector<float>(), wv = want.to_vector<float>(),
                                   av = a.to_vector<float>(), bv = b.to_vector<float>();
          for (size_t e = 0; e < g.size(); ++e) {
            const double silu_a = av[e] / (1.0 + std::exp(-double(av[e])));
            const double tol = atol * (1.1 * std::abs(bv[e]) + std::abs(silu_a)) + 1e-5 * std::abs(wv[e]);
            ASSERT_NEAR(g[e], wv[e], tol) << "silu gate, element " << e;
          }
        }
      }
    }
  }
}

TEST(DecodeNormParity, ChunkedHeadWithNormEqualsThePlainOps) {
  uint32_t seed = 900;
  for (const Device& dev : test_devices()) {
    for (const DecodeFusionCase& c : kDecodeFusionCases) {
      SCOPED_TRACE(dev.name() + " m " + std::to_string(c.m) + " k " + std::to_string(c.k));
      Tensor x = random_tensor({c.m, c.k}, seed++, -2.0f, 2.0f), nw = random_tensor({c.k}, seed++, 0.5f, 1.5f);
      std::vector<Tensor> chunks = {random_tensor({c.n, c.k}, seed++), random_tensor({5, c.k}, seed++)};
      const Tensor want = matmul_chunked_transb(rms_norm(x, nw, 1e-5f), chunks, 0.5f);
      const Tensor NW = nw.to(dev);
      const RowNorm norm{&NW, 1e-5f};
      const Tensor got = matmul_chunked_transb(x.to(dev), {chunks[0].to(dev), chunks[1].to(dev)}, 0.5f, &norm);
      EXPECT_TRUE(all_close(got.to(Device::cpu()), want, decode_fusion_tolerance(c.k), 1e-5));
    }
  }
}

TEST(DecodeNormParity, BadNormsAndResidualsAreRefused) {
  Tensor x = Tensor::zeros({2, 8}), w = Tensor::zeros({4, 8}), short_w = Tensor::zeros({7});
  const RowNorm bad{&short_w, 1e-5f}, none{nullptr, 1e-5f};
  MatmulOptions o;
  o.transpose_b = true;
  o.norm = &bad;
  expect_error<ShapeError>("matmul", [&] { matmul(x, w, o); }, "norm weight");
  o.norm = &none;
  expect_error<ValueError>("matmul", [&] { matmul(x, w, o); }, "no weight");
  o.norm = nullptr;
  Tensor r = Tensor::zeros({2, 5});
  o.residual = &r;
  expect_error<ShapeError>("matmul", [&] { matmul(x, w, o); }, "residual");
  o.residual = nullptr;
  o.transpose_a = true;
  const RowNorm good{&short_w, 1e-5f};
  o.norm = &good;
  expect_error<ShapeError>("matmul", [&] { matmul(w, w, o); }, "rank-2");
  expect_error<ShapeError>("matmul_transb_many", [&] { matmul_transb_many(x, {w, w, w}, &bad); }, "norm weight");
  expect_error<ShapeError>("silu_gate_matmul", [&] { silu_gate_matmul(x, w, w, &bad); }, "norm weight");
  expect_error<ShapeError>("matmul_chunked_transb", [&] { matmul_chunked_transb(x, {w}, 1.0f, &bad); }, "norm weight");
  expect_error<ShapeError>("row_norm", [&] { row_norm(x, bad); }, "norm weight");
  Tensor wi = Tensor::zeros({8}, DType::I32);
  const RowNorm int_norm{&wi, 1e-5f};
  expect_error<DTypeError>("row_norm", [&] { row_norm(x, int_norm); }, "norm weight");
}

}  // namespace
}  // namespace forge::testing
