// Kernels built from several embedded WGSL files. WGSL has no includes, so a
// shared snippet such as shaders/philox.wgsl (the dropout random stream, one
// definition for every kernel that draws from it) is prepended as text: the
// source is concatenated once, when the kernel constant is defined, and the
// pipeline cache keys on the constant's address as for any other kernel.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>

#include "gpu/runtime.h"

namespace forge::webgpu {

class ComposedKernel {
 public:
  ComposedKernel(std::string_view name, std::initializer_list<std::string_view> parts,
                 std::string_view entry = "main") {
    for (std::string_view part : parts) {
      source_ += part;
      source_ += '\n';
    }
    kernel_.name = name;
    kernel_.source = source_;
    kernel_.entry = entry;
  }
  ComposedKernel(const ComposedKernel&) = delete;
  ComposedKernel& operator=(const ComposedKernel&) = delete;

  const gpu::Kernel& kernel() const { return kernel_; }

 private:
  std::string source_;
  gpu::Kernel kernel_;
};

}  // namespace forge::webgpu
