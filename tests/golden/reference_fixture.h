// A reference fixture folder (tests/fixtures/NAME): the model files and
// reference.safetensors made by Hugging Face transformers.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "forge/safetensors.h"
#include "forge/tensor.h"
#include "parity/parity.h"
#include "unit/this_build.h"

namespace forge::testing {

struct Fixture {
  std::string dir;
  SafetensorsFile ref;
  explicit Fixture(const std::string& name)
      : dir(std::string(forge::testing::test_data_dir()) + "/" + name),
        ref(SafetensorsFile::open(dir + "/reference.safetensors")) {}
  std::vector<float> f32(const std::string& n) const { return ref.get(n).to_f32(); }
  Shape shape(const std::string& n) const { return ref.get(n).shape(); }
  bool has(const std::string& n) const { return ref.contains(n); }
  Tensor input_ids() const {
    std::vector<float> v = f32("input_ids");
    std::vector<uint32_t> ids(v.begin(), v.end());
    return Tensor::from_vector(ids, shape("input_ids"));
  }
  std::vector<uint32_t> ids(const std::string& n) const {
    std::vector<float> v = f32(n);
    return {v.begin(), v.end()};
  }
};

// Each of `hidden` (a forward's hidden states: embeddings, blocks, final
// norm) against the fixture's hidden_states [L + 1, B, T, C].
inline void expect_hidden_states(const Fixture& fx, const std::vector<Tensor>& hidden, double atol, double rtol,
                                 const std::string& where) {
  const Shape hs = fx.shape("hidden_states");
  ASSERT_EQ(int64_t(hidden.size()), hs[0]) << where;
  const std::vector<float> want = fx.f32("hidden_states");
  const size_t per = size_t(numel(hs) / hs[0]);
  for (size_t l = 0; l < hidden.size(); ++l) {
    std::vector<float> w(want.begin() + long(l * per), want.begin() + long((l + 1) * per));
    EXPECT_TRUE(all_close(hidden[l].to_f32(), w, atol, rtol)) << "hidden state " << l << " of " << where;
  }
}

}  // namespace forge::testing
