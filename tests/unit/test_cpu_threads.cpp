// The CPU kernels give bit-identical results on one thread and on several
// (the OpenBLAS-backed products within f32 rounding): each op on sizes above
// the parallel threshold (odd ones, so ranges split unevenly), run with 1 and
// then 2 and 3 OpenMP threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "forge/ops.h"
#include "forge/quantize.h"

#if FORGE_TEST_OPENMP
#include <omp.h>
#endif

namespace {

using forge::Tensor;

Tensor random(const forge::Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(size_t(forge::numel(shape)));
  for (float& x : v) x = d(rng);
  return Tensor::from_vector(v, shape);
}

std::vector<uint32_t> bits(const Tensor& t) {
  std::vector<uint32_t> b(size_t(t.numel()));
  std::memcpy(b.data(), t.raw_data(), b.size() * 4);
  return b;
}

// The tensors `run` produces, on `threads` threads.
std::vector<std::vector<uint32_t>> on_threads(int threads, const std::function<std::vector<Tensor>()>& run) {
#if FORGE_TEST_OPENMP
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
#endif
  std::vector<std::vector<uint32_t>> out;
  for (const Tensor& t : run()) out.push_back(bits(t));
#if FORGE_TEST_OPENMP
  omp_set_num_threads(before);
#endif
  return out;
}

void expect_same_on_any_thread_count(const char* what, const std::function<std::vector<Tensor>()>& run) {
  const auto one = on_threads(1, run);
  for (int threads : {2, 3}) EXPECT_EQ(on_threads(threads, run), one) << what << " on " << threads << " threads";
}

// The products that OpenBLAS sums: each thread's block of C is one sgemm
// call, and OpenBLAS may round an element differently with the shape of the
// call (its small-matrix and edge kernels sum in another order), which
// depends on how the blocks fall to threads. On an AMD EPYC the 257-row
// product below split over two threads differed in the last bits; elsewhere
// it was bit-identical. So each output agrees within f32 rounding of its
// sums: 1e-6 of the output's largest magnitude (about 16 ulps of it), far
// below what a misplaced block or a lost slice of k would change.
void expect_close_on_any_thread_count(const char* what, const std::function<std::vector<Tensor>()>& run) {
  const auto one = on_threads(1, run);
  for (int threads : {2, 3}) {
    const auto many = on_threads(threads, run);
    ASSERT_EQ(many.size(), one.size()) << what;
    for (size_t t = 0; t < one.size(); ++t) {
      ASSERT_EQ(many[t].size(), one[t].size()) << what;
      std::vector<float> a(one[t].size()), b(one[t].size());
      std::memcpy(a.data(), many[t].data(), a.size() * 4);
      std::memcpy(b.data(), one[t].data(), b.size() * 4);
      float largest = 0;
      for (float v : b) largest = std::max(largest, std::abs(v));
      ASSERT_GT(largest, 1.0f) << what << ": output " << t << " is all but zero";
      for (size_t i = 0; i < b.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-6f * largest) << what << " on " << threads << " threads, output " << t
                                                 << " element " << i;
    }
  }
}

TEST(CpuThreads, KernelsBitIdentical) {
  const int64_t R = 257, C = 771;
  const Tensor x = random({R, C}, 1), dy = random({R, C}, 2), g = random({C}, 3), b = random({C}, 4);
  expect_same_on_any_thread_count("gelu", [&] { return std::vector{forge::gelu(x), forge::gelu_bwd(x, dy)}; });
  expect_same_on_any_thread_count("silu", [&] { return std::vector{forge::silu(x), forge::silu_bwd(x, dy)}; });
  expect_same_on_any_thread_count("add/mul", [&] { return std::vector{forge::add(x, dy), forge::mul(x, dy)}; });
  expect_same_on_any_thread_count("layernorm", [&] {
    auto gr = forge::layernorm_bwd(x, g, dy);
    return std::vector{forge::layernorm(x, g, b), gr.dx, gr.dgamma, gr.dbeta};
  });
  expect_same_on_any_thread_count("softmax", [&] {
    forge::SoftmaxOptions causal;
    causal.causal = true;
    causal.q_len = R;
    const Tensor y = forge::softmax(x);
    return std::vector{y, forge::softmax(x.reshape({1, R, C}), causal), forge::softmax_bwd(y, dy)};
  });
  expect_same_on_any_thread_count("reductions", [&] {
    return std::vector{forge::sum_rows(x), forge::sumsq_tensor(random({1 << 20}, 5))};
  });
  std::vector<uint32_t> ids(R);
  for (int64_t r = 0; r < R; ++r) ids[size_t(r)] = uint32_t((r * 7) % 13);  // repeated ids
  const Tensor id = Tensor::from_vector(ids, {R});
  expect_same_on_any_thread_count("gather", [&] {
    Tensor dst = Tensor::zeros({13, C});
    forge::scatter_add_rows(dst, id, x);
    return std::vector{forge::ce_bwd(forge::softmax(x), id, 0.5f), forge::embedding(id, x), dst};
  });
  expect_same_on_any_thread_count("training", [&] {
    Tensor p = forge::add(x, Tensor::zeros({R, C})).reshape({R * C});  // a copy to update in place
    Tensor m = Tensor::zeros({R * C}), v = Tensor::zeros({R * C});
    const Tensor grad = dy.reshape({R * C});
    forge::adamw(p, grad, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.1, 1);
    return std::vector{p, m, v, forge::dropout(x, 0.1f, 7)};
  });
  expect_same_on_any_thread_count("attention", [&] {
    // GQA (6 query heads over 2 kv heads), causal with an offset, dropout.
    const Tensor q = random({2, 37, 6, 16}, 7), k = random({2, 41, 2, 16}, 8), v = random({2, 41, 2, 16}, 9);
    const Tensor dout = random({2, 37, 6, 16}, 10);
    forge::AttentionOptions o;
    o.causal = true;
    o.kv_offset = 4;
    o.dropout_p = 0.1f;
    o.dropout_seed = 11;
    forge::AttentionForward f = forge::flash_attention_v2_lse(q, k, v, o);
    forge::AttentionGrads g = forge::flash_attention_v2_backward(q, k, v, f.out, dout, o, nullptr, &f.lse);
    return std::vector{f.out, f.lse, g.grad_q, g.grad_k, g.grad_v};
  });
  expect_close_on_any_thread_count("matmul", [&] {
    forge::MatmulOptions tb;
    tb.transpose_b = true;
    return std::vector{forge::matmul(x, random({C, 129}, 6)), forge::matmul(x.reshape({1, R, C}), x.reshape({1, R, C}), tb)};
  });
  expect_same_on_any_thread_count("one row against [k, n]", [&] {
    // A decode step's product: B's rows cut into slices over the threads.
    const Tensor w = random({C, 129}, 6), bias = random({129}, 15);
    forge::MatmulOptions o, ta;
    o.bias = &bias;
    ta.transpose_a = true;
    return std::vector{forge::matmul(x.slice_rows(0, 1), w, o), forge::matmul(random({C, 1}, 16), w, ta)};
  });
  expect_same_on_any_thread_count("quantized matmul", [&] {
    // W [300, 256] in 4 bits: x of 3 rows reads the packed words, 40 rows the
    // dequantized blocks (both split over the threads by rows of W).
    const int64_t out = 300, in = 256;
    const std::vector<float> w = random({out, in}, 12).to_vector<float>();
    forge::QuantSpec spec;
    spec.bits = 4;
    spec.group_size = 64;
    const forge::QuantizedMatrix q = forge::quantize_affine(w, out, in, spec);
    const Tensor words = Tensor::from_vector(q.words, {out, in / 8});
    const Tensor scales = Tensor::from_vector(q.scales, {out, in / 64}), biases = Tensor::from_vector(q.biases, {out, in / 64});
    return std::vector{forge::quantized_matmul(random({3, in}, 13), words, scales, biases, 4, 64),
                       forge::quantized_matmul(random({40, in}, 14), words, scales, biases, 4, 64)};
  });
}

// One row of A against B stored [k, n], whose k the CPU sums in slices of
// rows: the result, with a bias and with A transposed, against a sum in double.
TEST(CpuThreads, OneRowAgainstKnWeightsMatchesDoubleSums) {
  for (int64_t k : {int64_t(255), int64_t(256), int64_t(771)}) {
    const int64_t n = 37;
    const Tensor a = random({1, k}, 20), w = random({k, n}, 21), bias = random({n}, 22);
    forge::MatmulOptions o, ta;
    o.bias = &bias;
    o.alpha = 0.5f;
    ta.transpose_a = true;
    const std::vector<float> y = forge::matmul(a, w, o).to_vector<float>();
    const std::vector<float> yt = forge::matmul(a.reshape({k, 1}), w, ta).to_vector<float>();
    const std::vector<float> av = a.to_vector<float>(), wv = w.to_vector<float>(), bv = bias.to_vector<float>();
    ASSERT_EQ(int64_t(y.size()), n);
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0, mag = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        s += double(av[size_t(i)]) * wv[size_t(i * n + j)];
        mag += std::abs(double(av[size_t(i)]) * wv[size_t(i * n + j)]);
      }
      const double tol = 1e-6 * mag + 1e-6;
      EXPECT_NEAR(y[size_t(j)], 0.5 * s + bv[size_t(j)], tol) << "k " << k << " column " << j;
      EXPECT_NEAR(yt[size_t(j)], s, tol) << "k " << k << " column " << j << " (A transposed)";
    }
  }
}

}  // namespace
