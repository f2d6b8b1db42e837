// Parity and hand-checked cases for sample (forge/ops/sample.h): greedy is
// identical on both backends; with a fixed seed each case of the table draws
// the same id on the CPU and on WebGPU; the kept sets of top-k / top-p and the
// draw follow the documented rule.
#include <algorithm>
#include <cmath>
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
