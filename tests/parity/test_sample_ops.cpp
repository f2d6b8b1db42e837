// Parity and hand-checked cases for sample (forge/ops/sample.h): greedy is
// identical on both backends; with a fixed seed each case of the table draws
// the same id on the CPU and on WebGPU; the kept sets of top-k / top-p and the
// draw follow the documented rule.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "parity/parity.h"

using namespace forge;
using namespace forge::testing;

namespace {

std::vector<uint32_t> run(const Tensor& logits, const SampleOptions& o) { return sample(logits, o).to_vector<uint32_t>(); }

struct SampleCase {
  int64_t rows, vocab;
  float temperature;
  int64_t top_k;
  float top_p;
};

const std::vector<SampleCase> kCases = {
    {1, 1, 0, 0, 1},         {3, 17, 0, 0, 1},        {2, 129, 0, 0, 1},     {1, 50257, 0, 0, 1},
    {3, 17, 1.0f, 0, 1},     {2, 129, 0.7f, 0, 1},    {1, 1000, 1.3f, 0, 1}, {3, 129, 1.0f, 5, 1},
    {2, 17, 1.0f, 1, 1},     {1, 1000, 0.8f, 40, 1},  {3, 129, 1.0f, 0, 0.9f}, {2, 1000, 1.0f, 0, 0.5f},
    {1, 50257, 1.0f, 50, 0.95f}, {2, 257, 0.9f, 17, 0.8f},
};

}  // namespace

TEST(SampleParity, SameIdOnBothBackends) {
  uint32_t seed = 1;
  for (const SampleCase& c : kCases) {
    Tensor logits = random_tensor({c.rows, c.vocab}, seed++, -4.0f, 4.0f);
    Tensor gl = logits.to(gpu_device());
    for (uint64_t step : {0ull, 1ull, 7ull, 1000ull}) {
      SampleOptions o{c.temperature, c.top_k, c.top_p, 42, step};
      EXPECT_EQ(run(logits, o), run(gl, o)) << "rows " << c.rows << " V " << c.vocab << " t " << c.temperature
                                            << " k " << c.top_k << " p " << c.top_p << " step " << step;
    }
  }
}

TEST(SampleParity, GreedyIsArgmaxLowestIndexOnTies) {
  // Greedy rows take a CPU driver's one-invocation scan or a GPU's workgroup scans.
  for (const bool cpu_driver : {false, true}) {
    ForcedCpuDriver forced(cpu_driver);
    SCOPED_TRACE(cpu_driver ? "as a CPU driver" : "as a GPU driver");
    std::vector<float> v = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f, -INFINITY, 2.0f};
    Tensor t = Tensor::from_vector(v, {1, 7});
    EXPECT_EQ(run(t, {}), std::vector<uint32_t>{1});
    EXPECT_EQ(run(t.to(gpu_device()), {}), std::vector<uint32_t>{1});
    // top_k = 1 keeps only the argmax, so any temperature and seed draws it.
    for (uint64_t step = 0; step < 5; ++step) {
      SampleOptions o{2.0f, 1, 1.0f, 9, step};
      EXPECT_EQ(run(t, o), std::vector<uint32_t>{1});
      EXPECT_EQ(run(t.to(gpu_device()), o), std::vector<uint32_t>{1});
    }
    // Negative logits only, rank 1.
    Tensor n = Tensor::from_vector(std::vector<float>{-3.0f, -0.5f, -0.25f, -7.0f}, {4});
    EXPECT_EQ(run(n, {}), std::vector<uint32_t>{2});
    EXPECT_EQ(run(n.to(gpu_device()), {}), std::vector<uint32_t>{2});
  }
}

// Greedy over a vocabulary that each lane of the WebGPU scan reads in several
// strided streams (256 lanes, 4 streams, then a second round): equal maxima
// in one lane's different streams and rounds, and in different lanes, still
// give the smallest index on both backends.
TEST(SampleParity, GreedyTiesAcrossTheScanStreams) {
  // Greedy rows take a CPU driver's one-invocation scan or a GPU's workgroup scans.
  for (const bool cpu_driver : {false, true}) {
    ForcedCpuDriver forced(cpu_driver);
    SCOPED_TRACE(cpu_driver ? "as a CPU driver" : "as a GPU driver");
    const int64_t V = 2100;
    auto argmax_with = [&](const std::vector<int64_t>& at) {
      std::vector<float> v(size_t(V), -1.0f);
      for (int64_t i : at) v[size_t(i)] = 3.0f;
      Tensor t = Tensor::from_vector(v, {1, V});
      const std::vector<uint32_t> cpu = run(t, {}), gpu = run(t.to(gpu_device()), {});
      EXPECT_EQ(cpu, gpu);
      return cpu.at(0);
    };
    // Lane 44: streams 3, 1, then stream 0 of the second round.
    EXPECT_EQ(argmax_with({812, 300, 1068}), 300u);
    EXPECT_EQ(argmax_with({1068, 812}), 812u);
    // Lanes 45 and 44: the smaller index wins whatever lane holds it.
    EXPECT_EQ(argmax_with({301, 1324, 812}), 301u);
    // Only the last element, in the last round's last stream.
    EXPECT_EQ(argmax_with({V - 1}), uint32_t(V - 1));
  }
}

// Greedy over a vocabulary the WebGPU kernel cuts into chunks of 2048
// logits, each scanned by a workgroup of its own, then reduced: equal
// maxima on both sides of a chunk boundary and chunks apart, in several
// rows at once, give the smallest index of each row on both backends.
TEST(SampleParity, GreedyTiesAcrossChunksAndRows) {
  // Greedy rows take a CPU driver's one-invocation scan or a GPU's workgroup scans.
  for (const bool cpu_driver : {false, true}) {
    ForcedCpuDriver forced(cpu_driver);
    SCOPED_TRACE(cpu_driver ? "as a CPU driver" : "as a GPU driver");
    const int64_t V = 3 * 2048 + 5, rows = 4;
    const std::vector<std::vector<int64_t>> maxima = {{2048, 2047}, {6148, 4100, 4101}, {V - 1}, {0, 6000}};
    std::vector<float> v(size_t(rows * V), -INFINITY);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < V; ++i) v[size_t(r * V + i)] = -1.0f - float(i % 7);
      for (int64_t i : maxima[size_t(r)]) v[size_t(r * V + i)] = 5.0f + float(r);
    }
    const Tensor t = Tensor::from_vector(v, {rows, V});
    const std::vector<uint32_t> want = {2047, 4100, uint32_t(V - 1), 0};
    EXPECT_EQ(run(t, {}), want);
    EXPECT_EQ(run(t.to(gpu_device()), {}), want);
    // One row alone (a decode step), its maximum in the last, short chunk.
    const Tensor last = Tensor::from_vector(std::vector<float>(v.begin() + 2 * V, v.begin() + 3 * V), {1, V});
    EXPECT_EQ(run(last.to(gpu_device()), {}), std::vector<uint32_t>{uint32_t(V - 1)});
  }
}

// A row with a NaN (of either sign) or +inf has no token on either backend,
// greedy or drawn, whatever its other values; -inf is a masked logit; the
// other rows of the call keep their ids. V = 5000 takes the chunked greedy
// kernel on WebGPU, V = 40 the one-workgroup one.
TEST(SampleParity, NonFiniteRowsHaveNoToken) {
  // Greedy rows take a CPU driver's one-invocation scan or a GPU's workgroup scans.
  for (const bool cpu_driver : {false, true}) {
    ForcedCpuDriver forced(cpu_driver);
    SCOPED_TRACE(cpu_driver ? "as a CPU driver" : "as a GPU driver");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t V : {40, 5000}) {
      for (float bad : {nan, -nan, INFINITY}) {
        for (int64_t at : {int64_t(0), V / 2, V - 1}) {
          std::vector<float> v(size_t(3 * V));
          for (int64_t i = 0; i < 3 * V; ++i) v[size_t(i)] = float((i * 37) % 101) / 10.0f - 5.0f;
          v[size_t(V + at)] = bad;                  // row 1
          v[size_t(2 * V + (at + 1) % V)] = -INFINITY;  // row 2: masked, still finite enough
          const Tensor t = Tensor::from_vector(v, {3, V});
          for (const SampleOptions& o : {SampleOptions{}, SampleOptions{1.0f, 0, 1.0f, 5, 3},
                                         SampleOptions{0.8f, 7, 0.9f, 5, 3}}) {
            const std::vector<uint32_t> cpu = run(t, o), gpu = run(t.to(gpu_device()), o);
            EXPECT_EQ(cpu, gpu) << "V " << V << " bad " << bad << " at " << at << " t " << o.temperature;
            ASSERT_EQ(cpu.size(), 3u);
            EXPECT_EQ(cpu[1], kSampleNoToken) << "V " << V << " bad " << bad << " at " << at;
            EXPECT_LT(cpu[0], uint32_t(V));
            EXPECT_LT(cpu[2], uint32_t(V));
          }
        }
      }
    }
  }
}

TEST(SampleParity, DrawFollowsTheUniformNumber) {
  // Four equal logits: the draw is floor(u * 4) for the documented u.
  Tensor t = Tensor::from_vector(std::vector<float>(4, 0.25f), {1, 4});
  for (uint64_t step = 0; step < 16; ++step) {
    SampleOptions o{1.0f, 0, 1.0f, 123, step};
    uint32_t want = uint32_t(std::floor(sample_uniform(123, step, 0) * 4.0f));
    EXPECT_EQ(run(t, o)[0], want) << "step " << step;
    EXPECT_EQ(run(t.to(gpu_device()), o)[0], want) << "step " << step;
  }
}

TEST(SampleParity, TopKAndTopPKeepTheDocumentedSets) {
  // Probabilities 0.5, 0.25, 0.125, 0.125 (logits log p) in shuffled order.
  std::vector<float> lp = {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
  Tensor t = Tensor::from_vector(lp, {1, 4});
  for (const Device& d : {Device::cpu(), gpu_device()}) {
    Tensor x = t.to(d);
    std::vector<int> seen_k2(4, 0), seen_p(4, 0), seen_k3(4, 0);
    for (uint64_t step = 0; step < 200; ++step) {
      seen_k2[run(x, {1.0f, 2, 1.0f, 5, step})[0]]++;
      seen_p[run(x, {1.0f, 0, 0.7f, 5, step})[0]]++;  // 0.5 + 0.25 >= 0.7: ids 1 and 3
      seen_k3[run(x, {1.0f, 3, 1.0f, 5, step})[0]]++;  // tie at 0.125: the lower index (0) is kept
    }
    EXPECT_EQ(seen_k2[0] + seen_k2[2], 0) << d.name();
    EXPECT_GT(seen_k2[1], seen_k2[3]) << d.name();
    EXPECT_GT(seen_k2[3], 30) << d.name();
    EXPECT_EQ(seen_p[0] + seen_p[2], 0) << d.name();
    EXPECT_GT(seen_p[3], 30) << d.name();
    EXPECT_EQ(seen_k3[2], 0) << d.name();
    EXPECT_GT(seen_k3[0], 5) << d.name();
  }
}

TEST(SampleParity, DrawFrequenciesMatchSoftmax) {
  // 4000 draws from softmax([0, 1, 2]): each frequency within 0.03 of its
  // probability (about 4 standard deviations).
  Tensor t = Tensor::from_vector(std::vector<float>{0.0f, 1.0f, 2.0f}, {1, 3});
  std::vector<int> seen(3, 0);
  for (uint64_t step = 0; step < 4000; ++step) seen[run(t, {1.0f, 0, 1.0f, 77, step})[0]]++;
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(seen[size_t(i)] / 4000.0, std::exp(double(i)) / z, 0.03) << "id " << i;
}

TEST(SampleParity, RejectsBadOptions) {
  Tensor t = random_tensor({2, 5}, 3);
  EXPECT_THROW(sample(t, {-1.0f}), ValueError);
  EXPECT_THROW(sample(t, {1.0f, -1}), ValueError);
  EXPECT_THROW(sample(t, {1.0f, 0, 0.0f}), ValueError);
  EXPECT_THROW(sample(t, {1.0f, 0, 1.5f}), ValueError);
  EXPECT_THROW(sample(random_tensor({2, 2, 2}, 1), {}), ShapeError);
  EXPECT_THROW(sample(Tensor::zeros({3}, DType::U32), {}), DTypeError);
  try {
    sample(t, {-1.0f});
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[sample]"), std::string::npos) << e.what();
  }
}

namespace {

// The logits a repeat penalty should give, computed here from the rule in
// forge/ops/sample.h: each distinct id < V of the row's window, once.
std::vector<float> penalized_by_hand(const std::vector<float>& z, int64_t vocab, const std::vector<uint32_t>& recent,
                                     int64_t window, float penalty) {
  std::vector<float> y = z;
  const float down = float(1.0 / double(penalty));
  for (size_t r = 0; r * size_t(vocab) < z.size(); ++r)
    for (int64_t j = 0; j < window; ++j) {
      const uint32_t id = recent[r * size_t(window) + size_t(j)];
      if (id >= vocab) continue;
      const float x = z[r * size_t(vocab) + id];
      y[r * size_t(vocab) + id] = x > 0 ? x * down : x < 0 ? x * penalty : x;
    }
  return y;
}

// A window of `n` ids per row below vocab + 3 (so some are empty slots), with repeats.
std::vector<uint32_t> random_window(int64_t rows, int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> id(0, uint32_t(std::min<int64_t>(vocab + 2, 40)));
  std::vector<uint32_t> w(size_t(rows * n));
  for (auto& x : w) x = id(rng);
  if (!w.empty()) w[0] = 0xFFFFFFFFu;
  return w;
}

struct PenaltyCase {
  int64_t rows, vocab, window;
  float temperature, top_p, min_p, penalty;
};

const std::vector<PenaltyCase> kPenaltyCases = {
    {1, 1, 1, 0, 1, 0, 1.3f},        {3, 17, 5, 0, 1, 0, 1.5f},       {2, 129, 64, 0, 1, 0, 0.7f},
    {1, 1000, 3, 1.0f, 1, 0, 1.1f},  {3, 129, 17, 0.8f, 1, 0.05f, 1.2f}, {2, 257, 1, 1.0f, 0.9f, 0.1f, 2.0f},
    {1, 1000, 300, 1.2f, 1, 0.2f, 1.0f}, {2, 17, 4, 1.0f, 1, 0.5f, 1.0f},  {1, 50257, 64, 1.0f, 0.95f, 0.01f, 1.1f},
};

}  // namespace

TEST(SampleParity, MinPAndRepeatPenaltySameIdOnBothBackends) {
  uint32_t seed = 100;
  for (const PenaltyCase& c : kPenaltyCases) {
    Tensor logits = random_tensor({c.rows, c.vocab}, seed++, -4.0f, 4.0f);
    Tensor recent = Tensor::from_vector(random_window(c.rows, c.window, c.vocab, seed++), {c.rows, c.window});
    Tensor gl = logits.to(gpu_device()), gr = recent.to(gpu_device());
    for (uint64_t step : {0ull, 3ull, 1000ull}) {
      SampleOptions o{c.temperature, 0, c.top_p, 42, step, c.min_p, c.penalty};
      EXPECT_EQ(sample(logits, o, recent).to_vector<uint32_t>(), sample(gl, o, gr).to_vector<uint32_t>())
          << "rows " << c.rows << " V " << c.vocab << " N " << c.window << " t " << c.temperature << " min_p "
          << c.min_p << " penalty " << c.penalty << " step " << step;
    }
  }
}

TEST(SampleParity, RepeatPenaltyEqualsHandPenalisedLogits) {
  // The draw from penalised logits is the draw from logits penalised by hand,
  // id for id (the penalty is exact: one f32 product per recent id).
  const int64_t rows = 2, vocab = 129, window = 9;
  const std::vector<float> z = random_values(rows * vocab, 7, -3.0f, 3.0f);
  const std::vector<uint32_t> w = random_window(rows, window, vocab, 8);
  for (float penalty : {1.3f, 0.6f}) {
    Tensor by_hand = Tensor::from_vector(penalized_by_hand(z, vocab, w, window, penalty), {rows, vocab});
    for (const Device& d : test_devices()) {
      Tensor logits = Tensor::from_vector(z, {rows, vocab}).to(d), recent = Tensor::from_vector(w, {rows, window}).to(d);
      for (uint64_t step = 0; step < 20; ++step) {
        SampleOptions o{step == 0 ? 0.0f : 1.0f, 0, 1.0f, 11, step, 0.0f, penalty};
        SampleOptions plain = o;
        plain.repeat_penalty = 1.0f;
        EXPECT_EQ(sample(logits, o, recent).to_vector<uint32_t>(), run(by_hand.to(d), plain))
            << d.name() << " penalty " << penalty << " step " << step;
      }
    }
  }
}

TEST(SampleParity, RepeatPenaltyFlipsTheArgmax) {
  // Greedy picks 0 (2.0 > 1.9) until 0 is recent: 2.0 / 1.1 = 1.818 < 1.9.
  // Negative logits are multiplied: -0.5 * 1.5 = -0.75 < -0.6, so 1 wins.
  // The window holds 0 twice and an empty slot; id 1 is penalised once only:
  // with penalty 1.5 on [2.0, 1.9, 1.3]: 2.0 / 1.5 = 1.333 > 1.3, 1.9 / 1.5 = 1.267.
  Tensor pos = Tensor::from_vector(std::vector<float>{2.0f, 1.9f, -1.0f}, {1, 3});
  Tensor neg = Tensor::from_vector(std::vector<float>{-0.5f, -0.6f, -2.0f}, {3});
  Tensor three = Tensor::from_vector(std::vector<float>{2.0f, 1.9f, 1.3f}, {1, 3});
  Tensor w0 = Tensor::from_vector(std::vector<uint32_t>{0, 0xFFFFFFFFu, 0}, {1, 3});
  Tensor w01 = Tensor::from_vector(std::vector<uint32_t>{1, 0, 1, 1}, {4});
  for (const Device& d : test_devices()) {
    SampleOptions o;
    o.repeat_penalty = 1.1f;
    EXPECT_EQ(run(pos.to(d), {}), std::vector<uint32_t>{0}) << d.name();
    EXPECT_EQ(sample(pos.to(d), o, w0.to(d)).to_vector<uint32_t>(), std::vector<uint32_t>{1}) << d.name();
    o.repeat_penalty = 1.5f;
    EXPECT_EQ(sample(neg.to(d), o, w0.reshape({3}).to(d)).to_vector<uint32_t>(), std::vector<uint32_t>{1}) << d.name();
    EXPECT_EQ(sample(three.to(d), o, w01.reshape({1, 4}).to(d)).to_vector<uint32_t>(), std::vector<uint32_t>{0})
        << d.name();
    // Penalty 1 is off: the argmax stays.
    o.repeat_penalty = 1.0f;
    EXPECT_EQ(sample(pos.to(d), o, w0.to(d)).to_vector<uint32_t>(), std::vector<uint32_t>{0}) << d.name();
  }
}

TEST(SampleParity, MinPKeepsTheDocumentedSet) {
  // Probabilities 0.5, 0.25, 0.125, 0.125 shuffled as in TopKAndTopP: weights
  // over the largest are 1, 0.5, 0.25, 0.25. min_p 0.4 keeps ids 1 and 3;
  // min_p 0.6 (and 1) keeps id 1 alone, which is what greedy picks.
  std::vector<float> lp = {std::log(0.125f), std::log(0.5f), std::log(0.125f), std::log(0.25f)};
  Tensor t = Tensor::from_vector(lp, {1, 4});
  for (const Device& d : test_devices()) {
    Tensor x = t.to(d);
    std::vector<int> seen(4, 0);
    for (uint64_t step = 0; step < 200; ++step) {
      seen[run(x, {1.0f, 0, 1.0f, 5, step, 0.4f})[0]]++;
      EXPECT_EQ(run(x, {1.0f, 0, 1.0f, 5, step, 0.6f})[0], 1u) << d.name();
    }
    EXPECT_EQ(seen[0] + seen[2], 0) << d.name();
    EXPECT_GT(seen[3], 30) << d.name();
    EXPECT_GT(seen[1], seen[3]) << d.name();
  }
  // On random logits (no ties), min_p 1 leaves the argmax: every draw is greedy.
  Tensor r = random_tensor({3, 1000}, 21, -4.0f, 4.0f);
  for (const Device& d : test_devices()) {
    const std::vector<uint32_t> greedy = run(r.to(d), {});
    for (uint64_t step = 0; step < 5; ++step)
      EXPECT_EQ(run(r.to(d), {1.5f, 0, 0.9f, 3, step, 1.0f}), greedy) << d.name() << " step " << step;
  }
}

TEST(SampleParity, RejectsBadMinPAndPenalty) {
  Tensor t = random_tensor({2, 5}, 3);
  Tensor w = Tensor::from_vector(std::vector<uint32_t>{1, 2, 3, 4}, {2, 2});
  expect_error<ValueError>("sample", [&] { sample(t, {1.0f, 0, 1.0f, 0, 0, -0.1f}); }, "min_p");
  expect_error<ValueError>("sample", [&] { sample(t, {1.0f, 0, 1.0f, 0, 0, 1.5f}); }, "min_p");
  expect_error<ValueError>("sample", [&] { sample(t, {1.0f, 0, 1.0f, 0, 0, NAN}); }, "min_p");
  expect_error<ValueError>("sample", [&] { sample(t, {0.0f, 0, 1.0f, 0, 0, 0.0f, 0.0f}, w); }, "repeat_penalty");
  expect_error<ValueError>("sample", [&] { sample(t, {0.0f, 0, 1.0f, 0, 0, 0.0f, -1.0f}, w); }, "repeat_penalty");
  expect_error<ValueError>("sample", [&] { sample(t, {0.0f, 0, 1.0f, 0, 0, 0.0f, INFINITY}, w); }, "repeat_penalty");
  expect_error<ShapeError>("sample", [&] { sample(t, {0.0f, 0, 1.0f, 0, 0, 0.0f, 1.2f}, w.reshape({4})); }, "recent");
  expect_error<DTypeError>("sample", [&] { sample(t, {0.0f, 0, 1.0f, 0, 0, 0.0f, 1.2f}, random_tensor({2, 2}, 1)); });
}
