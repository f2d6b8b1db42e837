// A reference fixture folder (tests/fixtures/NAME): the model files and
// reference.safetensors made by Hugging Face transformers.
#pragma once
#include <string>
#include <vector>

#include "forge/safetensors.h"
#include "forge/tensor.h"

namespace forge::testing {

struct Fixture {
  std::string dir;
  SafetensorsFile ref;
  explicit Fixture(const std::string& name)
      : dir(std::string(FORGE_TEST_DATA) + "/" + name), ref(SafetensorsFile::open(dir + "/reference.safetensors")) {}
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

}  // namespace forge::testing
