// MatmulOptions::a_triangle: a product that reads only the lower or upper
// triangle of op(A), the rest taken as zero, whatever A holds there; and
// c_triangle: one that computes only a triangle of C and writes zero over
// the rest. Each case is checked on both devices against the plain product
// of A with the other side zeroed by hand (and C's zeroed after), over the
// paths the shapes take: vec4 tiles of 64 and of 128, A read as scalars,
// the scalar kernel (B unaligned), k past or short of m, a broadcast A, few
// rows, a bf16 B, a bias.
#include <cstring>

#include "parity/parity.h"

using namespace forge;
using namespace forge::testing;

namespace {

struct TriangleCase {
  Shape a, b;  // as stored
  bool ta, tb;
  Triangle tri;                   // of op(A)
  Triangle c_tri = Triangle::Full;  // of C
  bool bias = false;
};

// The [rows, cols] items of x (op(x)'s when transposed) with the side `tri`
// leaves out zeroed, stored as x was.
Tensor zero_other_side(const Tensor& x, bool transposed, Triangle tri) {
  if (tri == Triangle::Full) return x;
  std::vector<float> v = x.to_vector<float>();
  const int64_t rows = x.dim(-2), cols = x.dim(-1), items = x.numel() / (rows * cols);
  for (int64_t b = 0; b < items; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t i = transposed ? c : r, j = transposed ? r : c;  // op(x)[i, j]
        const bool kept = tri == Triangle::Lower ? j <= i : j >= i;
        if (!kept) v[size_t((b * rows + r) * cols + c)] = 0.0f;
      }
  return Tensor::from_vector(v, x.shape(), Device::cpu());
}

const char* name(Triangle t) { return t == Triangle::Lower ? "lower" : t == Triangle::Upper ? "upper" : "full"; }

std::string describe(const TriangleCase& c) {
  return "a " + shape_str(c.a) + " b " + shape_str(c.b) + " ta " + std::to_string(c.ta) + " tb " +
         std::to_string(c.tb) + " a " + name(c.tri) + " c " + name(c.c_tri) + (c.bias ? " bias" : "");
}

void check_triangle(const TriangleCase& c, uint32_t seed, DType b_dtype = DType::F32) {
  // Values well away from zero on the side left out, so that reading it shows.
  const Tensor a = random_tensor(c.a, seed, 1.0f, 2.0f);
  Tensor b = random_tensor(c.b, seed + 1);
  Tensor b_read = b;  // as the products read it
  if (b_dtype == DType::BF16) {
    // Truncated to bf16: the f32 reference holds exactly the bf16 values.
    std::vector<float> v = b.to_vector<float>();
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      h[i] = uint16_t(bits >> 16);
      bits = uint32_t(h[i]) << 16;
      std::memcpy(&v[i], &bits, 4);
    }
    b = Tensor::from_vector(v, c.b);
    b_read = Tensor::from_data(h.data(), c.b, DType::BF16);
  }
  const int64_t n = c.tb ? c.b[c.b.size() - 2] : c.b.back();
  const Tensor bias = random_tensor({n}, seed + 2, 1.0f, 2.0f);
  MatmulOptions plain;
  plain.transpose_a = c.ta;
  plain.transpose_b = c.tb;
  plain.alpha = 0.5f;
  if (c.bias) plain.bias = &bias;
  MatmulOptions tri = plain;
  tri.a_triangle = c.tri;
  tri.c_triangle = c.c_tri;
  const Tensor want = zero_other_side(matmul(zero_other_side(a, c.ta, c.tri), b, plain), false, c.c_tri);
  const int64_t k = c.ta ? c.a[c.a.size() - 2] : c.a.back();
  const double atol = 4e-6 * std::sqrt(double(k) + 1);
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    const Tensor bias_d = bias.to(d);
    if (c.bias) tri.bias = &bias_d;
    const Tensor got = matmul(a.to(d), b_read.to(d), tri);
    ASSERT_EQ(got.shape(), want.shape()) << describe(c);
    EXPECT_TRUE(all_close(got.to(Device::cpu()), want, atol, 1e-5)) << d.name() << ": " << describe(c);
  }
}

TEST(Parity, MatmulTriangle) {
  // Each distinct set of kernel constants compiles a pipeline (about a
  // second on a CPU driver): the cases cover them once each.
  const std::vector<TriangleCase> cases = {
      // Causal attention's products: P @ V, dS @ K (lower), dS^T @ Q (upper).
      {{3, 64, 64}, {3, 64, 16}, false, false, Triangle::Lower},
      {{2, 96, 96}, {2, 96, 32}, true, false, Triangle::Upper},
      // k no multiple of the slices or rows (A read as scalars; k checked).
      {{2, 70, 70}, {2, 70, 24}, false, false, Triangle::Lower},
      // k short of m (rows past k read none of it) and past it.
      {{150, 40}, {40, 36}, false, false, Triangle::Upper},
      {{40, 150}, {36, 150}, false, true, Triangle::Lower},
      // B unaligned: the scalar kernel.
      {{2, 33, 33}, {2, 7, 33}, true, true, Triangle::Upper},
      // Few rows (the matrix-vector kernels' shapes) and a broadcast A.
      {{3, 3}, {3, 8}, false, false, Triangle::Lower},
      {{20, 20}, {4, 20, 12}, false, false, Triangle::Lower},
      // 100 tiles of 128x128 (a wave of a large GPU).
      {{100, 128, 128}, {100, 128, 64}, true, false, Triangle::Upper},
      // A triangle of C: causal scores Q K^T (k = 64: 64x64 tiles), a
      // 128x128 tile's grid of them, the scalar kernel, few rows, a bias
      // (zeroed as well), and both triangles at once.
      {{3, 100, 64}, {3, 100, 64}, false, true, Triangle::Full, Triangle::Lower},
      {{256, 512}, {512, 256}, false, false, Triangle::Full, Triangle::Upper, true},
      {{2, 33, 33}, {2, 33, 7}, false, false, Triangle::Full, Triangle::Lower, true},
      {{3, 5}, {5, 4}, false, false, Triangle::Full, Triangle::Lower},
      {{2, 70, 70}, {2, 70, 72}, false, false, Triangle::Lower, Triangle::Lower},
  };
  uint32_t seed = 4100;
  for (const auto& c : cases) check_triangle(c, seed += 2);
  check_triangle({{5, 5}, {4, 5}, false, true, Triangle::Lower}, seed += 2, DType::BF16);
  check_triangle({{2, 40, 40}, {40, 8}, false, false, Triangle::Upper}, seed += 2, DType::BF16);
}

// Attention's triangles in 64x64 tiles of 8x8 invocations
// (FORGE_MATMUL_THREADS=8).
TEST(Parity, MatmulTriangleInEightByEightInvocations) {
  ScopedEnv threads("FORGE_MATMUL_THREADS", "8");
  uint32_t seed = 4300;
  check_triangle({{3, 64, 64}, {3, 64, 16}, false, false, Triangle::Lower}, seed += 2);
  check_triangle({{2, 96, 96}, {2, 96, 32}, true, false, Triangle::Upper}, seed += 2);
  check_triangle({{2, 70, 70}, {2, 70, 72}, false, false, Triangle::Lower, Triangle::Lower}, seed += 2);
}

// Exact values: ones under a triangle of A count the terms each row sums;
// a triangle of C keeps its side of the diagonal.
TEST(Values, MatmulTriangleCountsItsTerms) {
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    const Tensor a = Tensor::from_vector(std::vector<float>(16, 1.0f), {4, 4}, d);
    const Tensor b = Tensor::from_vector(std::vector<float>(4, 1.0f), {4, 1}, d);
    MatmulOptions o;
    o.a_triangle = Triangle::Lower;
    EXPECT_EQ(matmul(a, b, o).to_vector<float>(), (std::vector<float>{1, 2, 3, 4})) << d.name();
    o.a_triangle = Triangle::Upper;
    EXPECT_EQ(matmul(a, b, o).to_vector<float>(), (std::vector<float>{4, 3, 2, 1})) << d.name();
    // Ones through a lower triangle of C: row i keeps columns 0..i.
    MatmulOptions c;
    c.c_triangle = Triangle::Lower;
    const Tensor row = Tensor::from_vector(std::vector<float>(3, 1.0f), {3, 1}, d);
    const Tensor col = Tensor::from_vector(std::vector<float>(3, 1.0f), {1, 3}, d);
    EXPECT_EQ(matmul(row, col, c).to_vector<float>(), (std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1})) << d.name();
  }
}

}  // namespace
