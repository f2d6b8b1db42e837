// GPT-2's decode-step fusions: a LayerNorm (with or without its bias) as
// the norm of a product's input rows (RowNorm::layer / bias), the gelu
// epilogue (MatmulOptions::gelu) and the residual, against B [n, k] (f32 or
// bf16, the vec4 kernels) and against a Conv1D B [k, n] (matvec.wgsl,
// whose main_kn reads B as vec4s, or as scalars under FORGE_MATMUL_SCALAR,
// 4 or 8 columns a workgroup): on every device they equal the plain ops on
// the CPU (layernorm, then the product, then gelu, then add). Odd sizes; rows and k as the
// kernels split them (1 and 3: the 4-row kernels; 17: the serial one below
// k 256, 8 past it; 40: composed; k 30, not a multiple of 4: composed).
// A CPU driver composes a LayerNorm (gpu::Runtime::cpu_driver): the tests
// take the GPU's kernels on every adapter.
#include <cmath>

#include "decode_fusion_cases.h"

namespace forge::testing {
namespace {

// One layout of B: stored [n, k] (transpose_b, f32 or bf16) or [k, n] (f32),
// the latter read as vec4s or, under FORGE_MATMUL_SCALAR, as scalars, in
// main_kn's workgroups of 4 columns (its choice for these small grids) or
// 8 (forced).
struct Layout {
  bool transpose_b;
  DType dtype;
  bool scalar_loads = false;
  const char* kn_cols = nullptr;
};
const std::vector<Layout> kLayouts = {{true, DType::F32},
                                      {true, DType::BF16},
                                      {false, DType::F32},
                                      {false, DType::F32, false, "8"},
                                      {false, DType::F32, true, "8"}};

// The GPU's choice of kernels on every adapter, for the test's life.
struct GpuKernels {
#ifdef FORGE_HAVE_WEBGPU
  ForcedCpuDriver forced{false};
#endif
};

TEST(DecodeLayerNormParity, LayerNormGeluResidualAndBiasEqualThePlainOps) {
  for (const ReduceForm& form : reduce_forms()) {
    ReduceFormScope form_scope(form);
    SCOPED_TRACE(form.name);
    GpuKernels gpu_kernels;
    uint32_t seed = 900;
    for (const Layout& lay : kLayouts) {
      ScopedEnv loads("FORGE_MATMUL_SCALAR", lay.scalar_loads ? "1" : nullptr);
      ScopedEnv cols("FORGE_MATMUL_KN_COLS", lay.kn_cols);
      for (const Device& dev : test_devices()) {
        for (const DecodeFusionCase& c : kDecodeFusionCases) {
          SCOPED_TRACE(dev.name() + " " + dtype_name(lay.dtype) + (lay.transpose_b ? " [n, k]" : " [k, n]") +
                       (lay.scalar_loads ? " scalar loads" : "") + (lay.kn_cols ? " 8 columns" : "") + " m " +
                       std::to_string(c.m) + " k " + std::to_string(c.k) + " n " + std::to_string(c.n));
          // Rows off centre, so that the mean matters.
          const Tensor x = random_tensor({c.m, c.k}, seed++, -1.0f, 3.0f);
          const Tensor wnk = weight_as(random_tensor({c.n, c.k}, seed++), lay.dtype);
          const Tensor wd = lay.dtype == DType::BF16 ? bf16_to_f32(wnk) : wnk;  // [n, k] f32
          const Tensor w = lay.transpose_b ? wnk : transposed(wnk);
          const Tensor nw = random_tensor({c.k}, seed++, 0.5f, 1.5f), nb = random_tensor({c.k}, seed++);
          const Tensor bias = random_tensor({c.n}, seed++), r = random_tensor({c.m, c.n}, seed++);
          const float eps = 1e-5f;
          // The plain ops on the CPU.
          MatmulOptions plain;
          plain.transpose_b = true;
          const Tensor h = layernorm(x, nw, nb, eps), h0 = layernorm(x, nw, Tensor::zeros({c.k}), eps);
          const Tensor want_norm = matmul(h0, wd, plain);
          plain.bias = &bias;
          const Tensor want_gelu = gelu(matmul(h, wd, plain));
          const Tensor want_res = add(r, matmul(h, wd, plain));
          const Tensor want_gelu_res = add(r, gelu(matmul(x, wd, plain)));

          const Tensor X = x.to(dev), W = w.to(dev), NW = nw.to(dev), NB = nb.to(dev), BIAS = bias.to(dev), R = r.to(dev);
          const RowNorm ln{&NW, eps, true, &NB}, ln0{&NW, eps, true, nullptr};
          const double atol = decode_fusion_tolerance(c.k);
          MatmulOptions o;
          o.transpose_b = lay.transpose_b;
          o.norm = &ln0;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_norm, atol, 1e-5)) << "layernorm, no bias";
          o.norm = &ln;
          o.bias = &BIAS;
          o.gelu = true;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_gelu, atol, 1e-5)) << "layernorm, bias, gelu";
          o.gelu = false;
          o.residual = &R;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_res, atol, 1e-5)) << "layernorm, residual";
          o.norm = nullptr;
          o.gelu = true;
          EXPECT_TRUE(all_close(matmul(X, W, o).to(Device::cpu()), want_gelu_res, atol, 1e-5)) << "gelu, residual";
          EXPECT_TRUE(all_close(row_norm(X, ln).to(Device::cpu()), h, 1e-6, 1e-6)) << "row_norm";
        }
      }
    }
  }
}

TEST(DecodeLayerNormParity, LayerNormHeadAndManyProductsEqualThePlainOps) {
  // The tied LM head over wte's chunks (GPT-2's ln_f in its product), and
  // the products that share one input (whose kernel takes RMSNorm alone: a
  // LayerNorm runs first there).
  GpuKernels gpu_kernels;
  uint32_t seed = 950;
  for (const Device& dev : test_devices()) {
    for (const DecodeFusionCase& c : kDecodeFusionCases) {
      SCOPED_TRACE(dev.name() + " m " + std::to_string(c.m) + " k " + std::to_string(c.k));
      const Tensor x = random_tensor({c.m, c.k}, seed++, -1.0f, 3.0f);
      const Tensor nw = random_tensor({c.k}, seed++, 0.5f, 1.5f), nb = random_tensor({c.k}, seed++);
      std::vector<Tensor> chunks = {random_tensor({c.n, c.k}, seed++), random_tensor({5, c.k}, seed++)};
      const Tensor h = layernorm(x, nw, nb, 1e-5f);
      const Tensor NW = nw.to(dev), NB = nb.to(dev), X = x.to(dev);
      const RowNorm ln{&NW, 1e-5f, true, &NB};
      const Tensor got = matmul_chunked_transb(X, {chunks[0].to(dev), chunks[1].to(dev)}, 0.5f, &ln);
      EXPECT_TRUE(all_close(got.to(Device::cpu()), matmul_chunked_transb(h, chunks, 0.5f), decode_fusion_tolerance(c.k), 1e-5));
      const std::vector<Tensor> many = matmul_transb_many(X, {chunks[0].to(dev), chunks[1].to(dev)}, &ln);
      MatmulOptions o;
      o.transpose_b = true;
      for (size_t i = 0; i < 2; ++i)
        EXPECT_TRUE(all_close(many[i].to(Device::cpu()), matmul(h, chunks[i], o), decode_fusion_tolerance(c.k), 1e-5)) << i;
    }
  }
}

TEST(DecodeLayerNormParity, BadLayerNormsAreRefused) {
  Tensor x = Tensor::zeros({2, 8}), w = Tensor::zeros({4, 8}), nw = Tensor::from_vector(std::vector<float>(8, 1.0f), {8}), short_b = Tensor::zeros({7});
  Tensor nb = Tensor::zeros({8}), int_b = Tensor::zeros({8}, DType::I32);
  MatmulOptions o;
  o.transpose_b = true;
  const RowNorm rms_with_bias{&nw, 1e-5f, false, &nb};
  o.norm = &rms_with_bias;
  expect_error<ValueError>("matmul", [&] { matmul(x, w, o); }, "LayerNorm");
  const RowNorm short_bias{&nw, 1e-5f, true, &short_b};
  o.norm = &short_bias;
  expect_error<ShapeError>("matmul", [&] { matmul(x, w, o); }, "norm bias");
  expect_error<ShapeError>("row_norm", [&] { row_norm(x, short_bias); }, "norm bias");
  const RowNorm int_bias{&nw, 1e-5f, true, &int_b};
  expect_error<DTypeError>("row_norm", [&] { row_norm(x, int_bias); }, "norm bias");
  o.norm = nullptr;
  o.gelu = true;
  expect_error<ShapeError>("matmul", [&] { matmul(Tensor::zeros({1, 2, 8}), w, o); }, "rank-2");
}

}  // namespace
}  // namespace forge::testing
