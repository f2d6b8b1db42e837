// Reductions along a row in a fixed number of interleaved accumulators. One
// chain of dependent adds waits a full add latency per element (four cycles
// or so), several times what the loads and multiplies feeding it cost; eight
// independent lanes let the compiler keep them in one or two vector
// registers. The lane count is fixed, not the ISA's vector width, so every
// copy of a kernel (src/cpu/isa_clones.h) and every thread count sums in one
// order. Inline: a FORGE_ISA_CLONES caller vectorizes them for its ISA.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace forge::cpu {

inline constexpr int kRowLanes = 8;

// sum of term(j) over j in [0, n), in double: element j goes to lane j % 8
// (the tail to lane 0), then the lanes are added in order.
template <class Term>
inline double lane_sum(int64_t n, Term term) {
  double lane[kRowLanes] = {};
  int64_t j = 0;
  for (; j + kRowLanes <= n; j += kRowLanes)
    for (int l = 0; l < kRowLanes; ++l) lane[l] += term(j + l);
  for (; j < n; ++j) lane[0] += term(j);
  double sum = 0.0;
  for (double v : lane) sum += v;
  return sum;
}

// max over x[0, n) (-inf for n = 0), float or double.
template <class T>
inline T lane_max(const T* x, int64_t n) {
  T lane[kRowLanes];
  std::fill(lane, lane + kRowLanes, T(-INFINITY));
  int64_t j = 0;
  for (; j + kRowLanes <= n; j += kRowLanes)
    for (int l = 0; l < kRowLanes; ++l) lane[l] = std::max(lane[l], x[j + l]);
  for (; j < n; ++j) lane[0] = std::max(lane[0], x[j]);
  T mx = lane[0];
  for (int l = 1; l < kRowLanes; ++l) mx = std::max(mx, lane[l]);
  return mx;
}

}  // namespace forge::cpu
