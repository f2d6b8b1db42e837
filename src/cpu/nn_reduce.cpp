// sum_rows and sumsq, accumulated in double in an order that does not depend
// on the thread count.
#include <algorithm>
#include <vector>

#include "cpu/isa_clones.h"
#include "cpu/nn_kernels.h"
#include "cpu/parallel.h"

namespace forge::cpu {

// Columns spread over the threads; each column sums its rows in order.
void sum_rows(const Tensor& x, int64_t rows, int64_t cols, Tensor& out) {
  const float* px = x.data<float>();  // [rows, cols]
  float* po = out.data<float>();      // [cols]
  parallel_for(cols, rows, [&](int64_t lo, int64_t hi) {
    std::vector<double> acc(size_t(hi - lo), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = px + r * cols;
      for (int64_t j = lo; j < hi; ++j) acc[size_t(j - lo)] += xr[j];
    }
    for (int64_t j = lo; j < hi; ++j) po[j] = float(acc[size_t(j - lo)]);
  });
}

namespace {

// Elements per partial sum of sumsq, and the interleaved accumulators within
// one: fixed, so the result is the same on any thread count and ISA, and
// enough lanes that the adds vectorize instead of waiting on each other. The
// lanes are the same on every ISA (wider vectors only hold more of them at
// once), so each clone sums in one order. 32 lanes (eight chains of adds
// in 256-bit vectors): GPT-2 124M's gradient norm, 124M floats on two
// AVX-512 cores, 27.1-28.7 ms with 8 lanes, 23.2-25.9 with 16,
// 22.1-23.3 with 32; a float sum reads the same memory in 16 ms.
constexpr int64_t kSumsqChunk = int64_t(1) << 14;
constexpr int kSumsqLanes = 32;

FORGE_ISA_CLONES double sumsq_chunk(const float* x, int64_t n) {
  double lane[kSumsqLanes] = {};
  int64_t i = 0;
  for (; i + kSumsqLanes <= n; i += kSumsqLanes)
    for (int l = 0; l < kSumsqLanes; ++l) lane[l] += double(x[i + l]) * x[i + l];
  for (; i < n; ++i) lane[0] += double(x[i]) * x[i];
  double acc = 0;
  for (double v : lane) acc += v;
  return acc;
}

}  // namespace

double sumsq(const Tensor& x) {
  const float* px = x.data<float>();
  const int64_t n = x.numel(), chunks = (n + kSumsqChunk - 1) / kSumsqChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));
  parallel_for(chunks, kSumsqChunk, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c)
      partial[size_t(c)] = sumsq_chunk(px + c * kSumsqChunk, std::min(kSumsqChunk, n - c * kSumsqChunk));
  });
  double acc = 0;
  for (double v : partial) acc += v;
  return acc;
}

}  // namespace forge::cpu
