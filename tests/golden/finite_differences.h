// The finite-difference check of the training golden tests: analytic
// gradients against central differences of the loss at a few random
// elements of every parameter.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "forge/tensor.h"

namespace forge::testing {

using NamedTensors = std::vector<std::pair<std::string, Tensor*>>;

// For `probes` elements of each parameter (f32 on the CPU, changed in place
// and restored), (loss(w + h) - loss(w - h)) / 2h with h = 1e-2 must be within
// 1e-3 + 2% of the gradient. `grads` names the same tensors in the same order.
template <class Loss>
void expect_gradients_match_differences(const NamedTensors& params, const NamedTensors& grads, Loss&& loss,
                                        std::mt19937& rng, int probes, const std::string& what) {
  ASSERT_EQ(grads.size(), params.size()) << what;
  ASSERT_FALSE(params.empty()) << what;
  const double h = 1e-2;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, w_tensor] = params[i];
    ASSERT_EQ(grads[i].first, name) << what;
    ASSERT_TRUE(grads[i].second->defined()) << name << what;
    ASSERT_EQ(grads[i].second->shape(), w_tensor->shape()) << name << what;
    const std::vector<float> ga = grads[i].second->to_vector<float>();
    float* w = w_tensor->data<float>();
    std::uniform_int_distribution<int64_t> pick(0, w_tensor->numel() - 1);
    for (int k = 0; k < probes; ++k) {
      const int64_t e = pick(rng);
      const float keep = w[e];
      w[e] = keep + float(h);
      const double up = loss();
      w[e] = keep - float(h);
      const double down = loss();
      w[e] = keep;
      const double num = (up - down) / (2 * h);
      EXPECT_NEAR(ga[size_t(e)], num, 1e-3 + 0.02 * std::fabs(num)) << name << "[" << e << "]" << what;
    }
  }
}

}  // namespace forge::testing
