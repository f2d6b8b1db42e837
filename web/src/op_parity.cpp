// A few rows of the op parity suite (tests/parity) run in the page: each op on
// the page's WebGPU and on its CPU (wasm) path with the same inputs, and how far
// apart they are. The browser test (tests/web) holds the tolerances.
#include <emscripten.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forge/device.h"
#include "forge/ops.h"
#include "forge/tensor.h"

using nlohmann::json;

namespace forge::web {

namespace {

// Deterministic inputs in [-1, 1) (a 64-bit LCG), the same on both devices.
std::vector<float> values(int64_t n, uint64_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& v : out) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = float(double(x >> 40) / double(1ull << 24) * 2.0 - 1.0);
  }
  return out;
}

struct Input {
  Shape shape;
  std::vector<float> data;
};

Input input(const Shape& shape, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return {shape, values(n, seed)};
}

// Runs op on both devices -> {"op", "shape", "maxAbs", "maxRef"} (the largest
// |webgpu - cpu| and the largest |cpu|).
json compare(const std::string& name, const std::vector<Input>& inputs,
             const std::function<Tensor(const std::vector<Tensor>&)>& op) {
  std::vector<float> out[2];
  const Device devices[2] = {Device::cpu(), Device::webgpu()};
  for (int d = 0; d < 2; ++d) {
    std::vector<Tensor> ts;
    for (const Input& in : inputs) ts.push_back(Tensor::from_vector(in.data, in.shape, devices[d]));
    out[d] = op(ts).to(Device::cpu()).to_vector<float>();
  }
  double max_abs = 0, max_ref = 0;
  for (size_t i = 0; i < out[0].size(); ++i) {
    max_abs = std::max(max_abs, double(std::fabs(out[1][i] - out[0][i])));
    max_ref = std::max(max_ref, double(std::fabs(out[0][i])));
  }
  if (out[0].size() != out[1].size()) max_abs = INFINITY;
  return json{{"op", name}, {"shape", inputs[0].shape}, {"maxAbs", max_abs}, {"maxRef", max_ref},
              {"size", out[0].size()}};
}

}  // namespace

}  // namespace forge::web

using namespace forge;
using namespace forge::web;

extern "C" {

// -> {"results": [...]} for matmul, softmax (plain and causal), layernorm,
// rms_norm and flash attention (plain and causal), odd sizes as the native
// parity tables use; {"error"} when the page has no WebGPU.
EMSCRIPTEN_KEEPALIVE const char* forge_op_parity() {
  static std::string reply;
  json out;
  try {
    (void)Device::webgpu().runtime();  // throws when the page has no adapter
    json results = json::array();
    results.push_back(compare("matmul", {input({17, 33}, 1), input({33, 29}, 2)},
                              [](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); }));
    results.push_back(compare("matmul batched", {input({3, 5, 64}, 3), input({3, 64, 7}, 4)},
                              [](const std::vector<Tensor>& t) { return matmul(t[0], t[1]); }));
    results.push_back(compare("softmax", {input({5, 129}, 5)},
                              [](const std::vector<Tensor>& t) { return softmax(t[0]); }));
    results.push_back(compare("softmax causal", {input({17, 17}, 6)}, [](const std::vector<Tensor>& t) {
      return softmax(t[0], {.causal = true});
    }));
    results.push_back(compare("layernorm", {input({7, 65}, 7), input({65}, 8), input({65}, 9)},
                              [](const std::vector<Tensor>& t) { return layernorm(t[0], t[1], t[2]); }));
    results.push_back(compare("rms_norm", {input({7, 65}, 10), input({65}, 11)},
                              [](const std::vector<Tensor>& t) { return rms_norm(t[0], t[1]); }));
    results.push_back(compare("attention", {input({17, 16}, 12), input({23, 16}, 13), input({23, 16}, 14)},
                              [](const std::vector<Tensor>& t) { return flash_attention(t[0], t[1], t[2], false); }));
    results.push_back(compare("attention causal", {input({17, 16}, 15), input({17, 16}, 16), input({17, 16}, 17)},
                              [](const std::vector<Tensor>& t) { return flash_attention(t[0], t[1], t[2], true); }));
    out = json{{"results", results}};
  } catch (const std::exception& e) {
    out = json{{"error", e.what()}};
  }
  reply = out.dump();
  return reply.c_str();
}

}  // extern "C"
