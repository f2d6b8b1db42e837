// Quantized weights (forge/ops/quant.h): byte unpacking and MLX affine
// dequantization against hand-packed values (4 and 8 bits, groups 32, 64,
// 128; f32, bf16 and f16 scales) and against the dequantized tensors of the
// llama-tiny-mlx8 fixture; quantized_matmul against affine_dequantize +
// matmul (both WebGPU kernels: hardware GPUs' and CPU drivers'); CPU vs
// WebGPU; chunked paths; validation.
#include <cstring>
#include <functional>

#include "forge/safetensors.h"
#include "parity/parity.h"
#include "unit/this_build.h"

using namespace forge;
using namespace forge::testing;

namespace {

// A hand-quantized W [out, in]: values q, packed words, per-group scale and
// bias (stored as `dtype`) and the dense W the layout defines.
struct Quantized {
  Tensor w, scales, biases;  // u32 [out, in * bits / 32]; [out, in / group] x2
  std::vector<float> dense;  // [out, in]: f32(q) * scale + bias in f32
};

Quantized make_quantized(int64_t out, int64_t in, int bits, int group, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  int per = 32 / bits;
  std::vector<uint32_t> q(size_t(out * in)), words(size_t(out * in / per), 0u);
  for (int64_t i = 0; i < out * in; ++i) {
    q[i] = rng() & ((1u << bits) - 1u);
    words[i / per] |= q[i] << (bits * (i % per));
  }
  int64_t groups = in / group;
  // Scales in (0, 0.03] and biases in [-1, 1), rounded to the storage dtype.
  std::vector<float> s = random_values(out * groups, seed + 1, 0.001f, 0.03f);
  std::vector<float> b = random_values(out * groups, seed + 2);
  Quantized r;
  auto store = [&](std::vector<float>& v) {
    if (dtype == DType::F32) return Tensor::from_vector(v, {out, groups});
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      h[i] = dtype == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
      v[i] = dtype == DType::BF16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
    }
    return Tensor::from_data(h.data(), {out, groups}, dtype);
  };
  r.scales = store(s);
  r.biases = store(b);
  r.w = Tensor::from_vector(words, {out, in * bits / 32});
  r.dense.resize(q.size());
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) {
      float prod = float(q[o * in + i]) * s[o * groups + i / group];
      r.dense[o * in + i] = prod + b[o * groups + i / group];
    }
  return r;
}

// A CPU tensor uploaded with from_data, which pads an odd number of 16-bit
// values to whole words (Tensor::to needs a multiple of 4 bytes).
Tensor to_gpu(const Tensor& t) { return Tensor::from_data(t.raw_data(), t.shape(), t.dtype(), gpu_device()); }

TEST(QuantValues, DequantizeBytes) {
  Tensor words = Tensor::from_vector<uint32_t>({0x04030201u, 0xFF00807Fu}, {2});
  std::vector<float> want = {1, 2, 3, 4, 127, 128, 0, 255};
  for (const Device& d : {Device::cpu(), gpu_device()})
    EXPECT_EQ(dequantize(words.to(d)).to_vector<float>(), want) << d.name();
  // Odd sizes and a batched shape: exact on both.
  std::mt19937 rng(3);
  for (Shape s : std::vector<Shape>{{1}, {3}, {17}, {129}, {3, 17}, {2, 3, 5}}) {
    std::vector<uint32_t> v(size_t(numel(s)));
    for (auto& e : v) e = rng();
    Tensor t = Tensor::from_vector(v, s);
    Shape want_shape = s;
    want_shape.back() *= 4;
    EXPECT_EQ(dequantize(t).shape(), want_shape);
    EXPECT_TRUE(cpu_gpu_parity({t}, [](auto& x) { return dequantize(x[0]); }, 0, 0)) << shape_str(s);
  }
}

TEST(QuantValues, AffineDequantizeHandPacked) {
  uint32_t seed = 10;
  for (int bits : {4, 8})
    for (int group : {32, 64, 128})
      for (DType dt : {DType::F32, DType::BF16, DType::F16})
        for (auto [out, mult] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 2}, {17, 3}}) {
          Quantized q = make_quantized(out, group * mult, bits, group, dt, seed++);
          std::string what = std::to_string(bits) + " bits, group " + std::to_string(group) + ", " + dtype_name(dt) +
                             ", out " + std::to_string(out);
          // The CPU evaluates the same f32 product and sum: exact.
          EXPECT_TRUE(all_close(affine_dequantize(q.w, q.scales, q.biases, bits, group).to_vector<float>(), q.dense,
                                0, 0))
              << what;
          // The GPU may fuse the multiply-add (one rounding instead of two):
          // half an ulp of q * scale <= 7.65: 1e-6 absolute.
          Tensor got = affine_dequantize(to_gpu(q.w), to_gpu(q.scales), to_gpu(q.biases), bits, group);
          EXPECT_TRUE(all_close(got.to_vector<float>(), q.dense, 1e-6, 0)) << what;
        }
}

TEST(QuantValues, AffineDequantizeFixture) {
  std::string dir = std::string(forge::testing::test_data_dir()) + "/llama-tiny-mlx8/";
  SafetensorsFile model = SafetensorsFile::open(dir + "model.safetensors");
  SafetensorsFile ref = SafetensorsFile::open(dir + "reference.safetensors");
  auto load = [&](const std::string& name, DType dt) {
    TensorView v = model.get(name);
    return Tensor::from_data(v.bytes.data(), v.shape(), dt);
  };
  struct Case {
    std::string weight, reference;
    int64_t rows;  // rows of the reference (a prefix of the weight's rows)
  };
  const std::vector<Case> cases = {
      {"model.layers.0.self_attn.q_proj", "dequantized.model.layers.0.self_attn.q_proj.weight", 128},
      {"model.embed_tokens", "dequantized.model.embed_tokens.weight.rows0_7", 8}};
  for (const Case& c : cases) {
    Tensor w = load(c.weight + ".weight", DType::U32), s = load(c.weight + ".scales", DType::BF16),
           b = load(c.weight + ".biases", DType::BF16);
    std::vector<float> want = ref.get(c.reference).to_f32();
    for (const Device& d : {Device::cpu(), gpu_device()}) {
      std::vector<float> got = affine_dequantize(w.to(d), s.to(d), b.to(d), 8, 64).to_vector<float>();
      ASSERT_GE(got.size(), want.size());
      got.resize(want.size());
      // The reference is MLX's f32 q * scale + bias: within a fused
      // multiply-add's rounding, 1e-6 absolute.
      EXPECT_TRUE(all_close(got, want, 1e-6, 0)) << c.weight << " on " << d.name();
    }
  }
}

// Both WebGPU kernels: the 32-lane one of hardware GPUs and the barrier-free
// one of CPU drivers (main_serial), forced either way on this adapter.
TEST(QuantParity, QuantizedMatmul) {
  for (bool cpu_driver : {false, true}) {
    ForcedCpuDriver forced(cpu_driver);
    uint32_t seed = 100;
    for (int bits : {2, 4, 8})
      for (int group : {32, 64, 128})
        for (DType dt : {DType::F32, DType::BF16})
          for (Shape xs : std::vector<Shape>{
                   {2 * group}, {1, 2 * group}, {3, 2 * group}, {17, 2 * group}, {2, 3, 2 * group}, {64, group}}) {
            int64_t in = xs.back(), out = 17;
            Quantized q = make_quantized(out, in, bits, group, dt, seed++);
            Tensor x = random_tensor(xs, seed++);
            // A bias on the 3-row case: the kernels add it after the sum.
            const bool with_bias = numel(xs) == 3 * in;
            Tensor bias = random_tensor({out}, seed++);
            std::string what = std::to_string(bits) + " bits, group " + std::to_string(group) + ", " +
                               dtype_name(dt) + ", x " + shape_str(xs) + (cpu_driver ? ", serial" : ", 32 lanes");
            auto op = [&](auto& t) {
              return quantized_matmul(t[0], t[1], t[2], t[3], bits, group, with_bias ? &t[4] : nullptr);
            };
            // Against the dense route on each device: f32 sums of in <= 256
            // terms of size <= 1.3, each order's rounding up to about 2e-5;
            // two orders (a GPU's 32-lane tree against a serial sum, as on
            // the H200) differ by up to twice that: 5e-5 absolute, 1e-5 relative.
            for (const Device& d : {Device::cpu(), gpu_device()}) {
              Tensor xd = x.to(d), bd = bias.to(d);
              Tensor dense = affine_dequantize(q.w.to(d), q.scales.to(d), q.biases.to(d), bits, group);
              MatmulOptions tb;
              tb.transpose_b = true;
              tb.bias = with_bias ? &bd : nullptr;
              Tensor want = matmul(xd.reshape({numel(xs) / in, in}), dense, tb);
              Tensor got = quantized_matmul(xd, q.w.to(d), q.scales.to(d), q.biases.to(d), bits, group,
                                            with_bias ? &bd : nullptr);
              Shape want_shape = xs;
              want_shape.back() = out;
              EXPECT_EQ(got.shape(), want_shape);
              EXPECT_TRUE(all_close(got.to_vector<float>(), want.to_vector<float>(), 5e-5, 1e-5))
                  << what << " " << d.name();
            }
            EXPECT_TRUE(cpu_gpu_parity({x, q.w, q.scales, q.biases, bias}, op, 5e-5, 1e-5)) << what;
          }
  }
}

TEST(QuantChunked, AffineAndMatmul) {
  // W [256, 256] (8 bits: 256-byte rows, 4 f32 scales a row; 4 bits, f16
  // scales: 128-byte rows, 8 scales a row) and x [40, 256] under a 16 KiB
  // limit: W in runs of 16 or 64 rows, x and the output in runs of 16 rows.
  Quantized q = make_quantized(256, 256, 8, 64, DType::F32, 7);
  Quantized h = make_quantized(256, 256, 4, 32, DType::F16, 8);
  Tensor x = random_tensor({40, 256}, 9), xh = random_tensor({40, 256}, 10);
  Tensor words = Tensor::from_vector(std::vector<uint32_t>(3000, 0x01020304u), {3000});
  LoweredBindingLimit limit(16384);
  EXPECT_TRUE(cpu_gpu_parity({q.w, q.scales, q.biases},
                             [](auto& t) { return affine_dequantize(t[0], t[1], t[2], 8, 64); }, 1e-6, 0));
  EXPECT_TRUE(cpu_gpu_parity({h.w, h.scales, h.biases},
                             [](auto& t) { return affine_dequantize(t[0], t[1], t[2], 4, 32); }, 1e-6, 0));
  // Sums of 256 products in another order on each side: an H200 lands
  // 2.5e-5 from the CPU where the outputs cancel to 0.09 (1e-4 absolute).
  // Both kernels (see QuantParity.QuantizedMatmul).
  for (bool cpu_driver : {false, true}) {
    ForcedCpuDriver forced(cpu_driver);
    EXPECT_TRUE(cpu_gpu_parity({x, q.w, q.scales, q.biases},
                               [](auto& t) { return quantized_matmul(t[0], t[1], t[2], t[3], 8, 64); }, 1e-4, 1e-5))
        << (cpu_driver ? "serial" : "32 lanes");
    EXPECT_TRUE(cpu_gpu_parity({xh, h.w, h.scales, h.biases},
                               [](auto& t) { return quantized_matmul(t[0], t[1], t[2], t[3], 4, 32); }, 1e-4, 1e-5))
        << (cpu_driver ? "serial" : "32 lanes");
  }
  EXPECT_TRUE(cpu_gpu_parity({words}, [](auto& t) { return dequantize(t[0]); }, 0, 0));
}

TEST(QuantValidation, Errors) {
  Quantized q = make_quantized(3, 64, 8, 32, DType::F32, 1);
  expect_error<ValueError>("affine_dequantize", [&] { affine_dequantize(q.w, q.scales, q.biases, 3, 32); });
  expect_error<ValueError>("affine_dequantize", [&] { affine_dequantize(q.w, q.scales, q.biases, 8, 16); });
  expect_error<ShapeError>("affine_dequantize", [&] { affine_dequantize(q.w, q.scales, q.biases, 8, 64); },
                           "f32[3, 2]");
  expect_error<DTypeError>("affine_dequantize",
                           [&] { affine_dequantize(q.w, q.scales, Tensor::zeros({3, 2}, DType::BF16), 8, 32); });
  expect_error<DTypeError>("affine_dequantize",
                           [&] { affine_dequantize(Tensor::zeros({3, 16}), q.scales, q.biases, 8, 32); });
  expect_error<ShapeError>("quantized_matmul",
                           [&] { quantized_matmul(random_tensor({2, 63}, 1), q.w, q.scales, q.biases, 8, 32); },
                           "f32[2, 63]");
  expect_error<DTypeError>("dequantize", [&] { dequantize(random_tensor({4}, 1)); });
  expect_error<DeviceError>("quantized_matmul", [&] {
    quantized_matmul(random_tensor({2, 64}, 1).to(gpu_device()), q.w, q.scales, q.biases, 8, 32);
  });
}

}  // namespace
