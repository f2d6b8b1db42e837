// The parity harness: every op runs on the CPU and on WebGPU over a table of
// shapes (odd sizes included) and the results are compared with a tolerance
// stated per op. On machines without a GPU WebGPU is SwiftShader.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "forge/ops.h"
#include "gpu/runtime.h"
#include "unit/scoped_env.h"
#include "unit/this_build.h"

namespace forge::testing {

// The WebGPU device the suite compares against (created once).
inline const Device& gpu_device() {
  static Device d = Device::webgpu();
  return d;
}

// The devices a test that runs on every backend loops over: the CPU, and the
// WebGPU device when forge is built with it (the cpu-only preset is not).
inline std::vector<Device> test_devices() {
  if (forge::testing::webgpu_built()) return {Device::cpu(), gpu_device()};
  return {Device::cpu()};
}

// Restores the device's real binding limit when a test ends, even on failure.
struct LoweredBindingLimit {
  explicit LoweredBindingLimit(uint64_t bytes) { gpu_device().runtime().set_binding_limit_for_testing(bytes); }
  ~LoweredBindingLimit() { gpu_device().runtime().set_binding_limit_for_testing(0); }
  LoweredBindingLimit(const LoweredBindingLimit&) = delete;
  LoweredBindingLimit& operator=(const LoweredBindingLimit&) = delete;
};

// Likewise for the workgroup storage kernels size their tiles to.
struct LoweredWorkgroupStorage {
  explicit LoweredWorkgroupStorage(uint32_t bytes) { gpu_device().runtime().set_workgroup_storage_for_testing(bytes); }
  ~LoweredWorkgroupStorage() { gpu_device().runtime().set_workgroup_storage_for_testing(0); }
  LoweredWorkgroupStorage(const LoweredWorkgroupStorage&) = delete;
  LoweredWorkgroupStorage& operator=(const LoweredWorkgroupStorage&) = delete;
};

// Forces Runtime::cpu_driver() for the GPU device while in scope, so that the
// kernels picked for a CPU driver and for a hardware GPU both run here.
struct ForcedCpuDriver {
  explicit ForcedCpuDriver(bool yes) { gpu_device().runtime().set_cpu_driver_for_testing(yes ? 1 : 0); }
  ~ForcedCpuDriver() { gpu_device().runtime().set_cpu_driver_for_testing(-1); }
  ForcedCpuDriver(const ForcedCpuDriver&) = delete;
  ForcedCpuDriver& operator=(const ForcedCpuDriver&) = delete;
};

// The forms of the kernels' workgroup sums on the WebGPU device, each set
// for its iteration: the subgroup form where the device allows it, and the
// tree of barriers in workgroup memory (every device) -- with
// `for (ReduceForm form : reduce_forms())`. The tree alone where the device
// has no subgroup form, or forge is built without WebGPU.
struct ReduceForm {
  std::string name;
  bool tree;
};
inline std::vector<ReduceForm> reduce_forms() {
  if (forge::testing::webgpu_built() && gpu_device().runtime().subgroup_size() != 0)
    return {{"subgroup sums", false}, {"tree sums", true}};
  return {{"tree sums", true}};
}
// Sets a form for a scope; the device's own choice again after it.
struct ReduceFormScope {
  explicit ReduceFormScope(const ReduceForm& form) {
    if (forge::testing::webgpu_built()) gpu_device().runtime().set_tree_sums_for_testing(form.tree);
  }
  ~ReduceFormScope() {
    if (forge::testing::webgpu_built()) gpu_device().runtime().set_tree_sums_for_testing(false);
  }
  ReduceFormScope(const ReduceFormScope&) = delete;
  ReduceFormScope& operator=(const ReduceFormScope&) = delete;
};

// The norms' row layouts for a scope (row_launch in webgpu/composed_kernel.h):
// with the subgroup form, a subgroup to a row from one row on (the device
// takes it only for many rows), else a workgroup to a row -- with
// `for (ReduceForm form : reduce_forms()) { RowLayoutScope layout(form); ... }`.
struct RowLayoutScope {
  explicit RowLayoutScope(const ReduceForm& form)
      : form_(form), rows_("FORGE_ROW_SUBGROUP_ROWS", form.tree ? nullptr : "1") {}

 private:
  ReduceFormScope form_;
  ScopedEnv rows_;
};

// Runs `fn` and expects exception E whose message starts with "[op]" (and
// contains `also` when given).
template <class E>
void expect_error(const std::string& op, const std::function<void()>& fn, const std::string& also = "") {
  try {
    fn();
    ADD_FAILURE() << "no error from " << op;
  } catch (const E& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[" + op + "]", 0), 0u) << msg;
    if (!also.empty()) EXPECT_NE(msg.find(also), std::string::npos) << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << op << ": wrong exception type: " << e.what();
  }
}

// Deterministic uniform values in [lo, hi).
inline std::vector<float> random_values(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Tensor::from_vector(random_values(numel(shape), seed, lo, hi), shape);
}

// |got - want| <= atol + rtol * |want| elementwise; reports the worst element.
// Infinities must match exactly (inf - inf is NaN, which would pass any
// bound) and NaN is accepted only where NaN is expected.
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want,
                                            double atol, double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    double excess;
    if (std::isnan(g) || std::isnan(w)) excess = std::isnan(g) && std::isnan(w) ? 0 : INFINITY;
    else if (std::isinf(g) || std::isinf(w)) excess = g == w ? 0 : INFINITY;
    else excess = std::fabs(g - w) - (atol + rtol * std::fabs(w));
    if (excess > worst) {
      worst = excess;
      at = i;
    }
  }
  if (worst > 0)
    return ::testing::AssertionFailure() << "element " << at << ": got " << got[at] << ", want " << want[at]
                                         << " (atol " << atol << ", rtol " << rtol << ")";
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shapes differ: " << got.describe() << " vs " << want.describe();
  return all_close(got.to_f32(), want.to_f32(), atol, rtol);
}

// Runs `op` on CPU inputs and on the same inputs copied to WebGPU, and
// compares the outputs.
template <class Op>
::testing::AssertionResult cpu_gpu_parity(const std::vector<Tensor>& cpu_inputs, Op op, double atol, double rtol) {
  std::vector<Tensor> gpu_inputs;
  for (const auto& t : cpu_inputs) gpu_inputs.push_back(t.to(gpu_device()));
  Tensor want = op(cpu_inputs);
  Tensor got = op(gpu_inputs);
  if (!got.device().is_webgpu()) return ::testing::AssertionFailure() << "result not on the WebGPU device";
  return all_close(got, want, atol, rtol);
}

}  // namespace forge::testing
