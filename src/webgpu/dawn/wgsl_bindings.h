// The resource bindings a WGSL kernel declares (group 0), read from its
// source so that pipelines get explicit layouts: the parameter uniform then
// takes a dynamic offset, and bind groups can be reused across dispatches.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace forge::webgpu {

struct WgslBinding {
  enum class Kind { Uniform, ReadOnlyStorage, Storage };
  uint32_t binding;
  Kind kind;
};

// Throws forge::GpuError naming `kernel` for a declaration it cannot read.
std::vector<WgslBinding> wgsl_bindings(std::string_view source, std::string_view kernel);

}  // namespace forge::webgpu
