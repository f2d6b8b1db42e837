// sample on the CPU: the steps of forge/ops/sample.h, with every sum taken in
// the order of the WebGPU kernel's 256-lane strided reduction so both
// backends round alike.
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/philox.h"
#include "cpu/sample_kernel.h"
#include "forge/ops/sample.h"

namespace forge::cpu {

namespace {

constexpr int64_t kLanes = 256;

// Sum of f(i) for i < n: lane l adds i = l, l + 256, ... in order, then the
// lanes are combined pairwise as a tree (lane l += lane l + s, s = 128 .. 1).
template <class F>
float lane_sum(int64_t n, F f) {
  float part[kLanes] = {};
  for (int64_t l = 0; l < kLanes; ++l)
    for (int64_t i = l; i < n; i += kLanes) part[l] += f(i);
  for (int64_t s = kLanes / 2; s > 0; s >>= 1)
    for (int64_t l = 0; l < s; ++l) part[l] += part[l + s];
  return part[0];
}

uint32_t sample_row(const float* z, const SamplePlan& p, uint32_t row, std::vector<uint32_t>& key,
                    std::vector<float>& w) {
  const int64_t v = p.vocab;
  for (int64_t i = 0; i < v; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &z[i], 4);
    key[size_t(i)] = sample_order_key(bits);
  }
  uint32_t best = 0;
  for (int64_t i = 1; i < v; ++i)
    if (key[size_t(i)] > key[best]) best = uint32_t(i);
  if (key[best] >= kSampleKeyPosInf) return kSampleNoToken;
  if (p.greedy) return best;

  // Top-k: tk is the k-th largest key; ties at tk are kept below index jcut.
  uint32_t tk = 0, jcut = uint32_t(v);
  if (p.top_k) {
    auto count_ge = [&](uint32_t t) {
      uint32_t c = 0;
      for (int64_t i = 0; i < v; ++i) c += key[size_t(i)] >= t;
      return c;
    };
    for (int b = 31; b >= 0; --b) {
      uint32_t cand = tk | (1u << b);
      if (count_ge(cand) >= p.top_k) tk = cand;
    }
    uint32_t above = 0;
    for (int64_t i = 0; i < v; ++i) above += key[size_t(i)] > tk;
    const uint32_t need = p.top_k - above;
    uint32_t j = 0;
    for (int b = int(p.index_bits) - 1; b >= 0; --b) {
      uint32_t cand = j | (1u << b);
      uint32_t c = 0;
      for (int64_t i = 0; i < v && i < int64_t(cand); ++i) c += key[size_t(i)] == tk;
      if (cand <= uint32_t(v) && c <= need) j = cand;
    }
    jcut = j;
  }
  const float m = z[best] * p.inv_temp;
  for (int64_t i = 0; i < v; ++i) {
    bool kept = key[size_t(i)] > tk || (key[size_t(i)] == tk && uint32_t(i) < jcut);
    w[size_t(i)] = kept ? std::exp(z[i] * p.inv_temp - m) : 0.0f;
  }

  // Top-p: the highest key threshold whose kept weight reaches top_p of the total.
  uint32_t tp = 0;
  if (p.top_p < 1.0f) {
    const float target = p.top_p * lane_sum(v, [&](int64_t i) { return w[size_t(i)]; });
    for (int b = 31; b >= 0; --b) {
      uint32_t cand = tp | (1u << b);
      float s = lane_sum(v, [&](int64_t i) { return key[size_t(i)] >= cand ? w[size_t(i)] : 0.0f; });
      if (s >= target) tp = cand;
    }
  }
  // Min-p: w_i is the probability over the largest one's (w = 1 at the argmax).
  auto kept_w = [&](int64_t i) { return key[size_t(i)] >= tp && w[size_t(i)] >= p.min_p ? w[size_t(i)] : 0.0f; };
  const float u = float(philox_word0(p.step, row, p.k0, p.k1) >> 8) * (1.0f / 16777216.0f);
  const float r = u * lane_sum(v, kept_w);
  uint32_t j = 0;
  for (int b = int(p.index_bits) - 1; b >= 0; --b) {
    uint32_t cand = j | (1u << b);
    float s = lane_sum(v, [&](int64_t i) { return i < int64_t(cand) ? kept_w(i) : 0.0f; });
    if (cand <= uint32_t(v) && s <= r) j = cand;
  }
  return j < uint32_t(v) ? j : best;
}

}  // namespace

void sample(const Tensor& logits, const SamplePlan& p, Tensor& out) {
  const float* z = logits.data<float>();
  uint32_t* ids = out.data<uint32_t>();
  std::vector<uint32_t> key(size_t(p.vocab));
  std::vector<float> w(size_t(p.vocab));
  for (int64_t r = 0; r < p.rows; ++r) ids[r] = sample_row(z + r * p.vocab, p, uint32_t(r), key, w);
}

void repeat_penalty(const Tensor& logits, const Tensor& recent, const PenaltyPlan& p, Tensor& out) {
  const float* z = logits.data<float>();
  const uint32_t* ids = recent.data<uint32_t>();
  float* y = out.data<float>();
  std::memcpy(y, z, size_t(p.rows * p.vocab) * sizeof(float));
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t j = 0; j < p.window; ++j) {
      const uint32_t id = ids[r * p.window + j];
      // From the unpenalised logit, so an id that occurs twice is penalised once.
      if (id < uint64_t(p.vocab)) y[r * p.vocab + id] = repeat_penalized(z[r * p.vocab + id], p);
    }
}

}  // namespace forge::cpu
