// The resource bindings read from a kernel's WGSL source (the explicit
// pipeline layouts): one entry per binding in source order, comments
// ignored, a binding that names two variables of one address space taken
// once, and declarations it cannot read rejected with the kernel's name.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "forge/error.h"
#include "webgpu/dawn/wgsl_bindings.h"

using forge::webgpu::WgslBinding;
using forge::webgpu::wgsl_bindings;

namespace {

using Kind = WgslBinding::Kind;
using Entries = std::vector<std::pair<uint32_t, Kind>>;

// The (binding, kind) entries read from `source`, in their order.
Entries entries_of(std::string_view source) {
  Entries out;
  for (const WgslBinding& b : wgsl_bindings(source, "probe")) out.emplace_back(b.binding, b.kind);
  return out;
}

std::string error_of(std::string_view source) {
  try {
    wgsl_bindings(source, "probe");
  } catch (const forge::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(WgslBindings, ReadsEachBindingsAddressSpace) {
  EXPECT_EQ(entries_of(R"(
@group(0) @binding(0) var<uniform> p: Params;
// @group(0) @binding(7) var<storage, read> commented_out: array<f32>;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage,read_write> C: array<f32>;
)"),
            (Entries{{0, Kind::Uniform}, {1, Kind::ReadOnlyStorage}, {2, Kind::Storage}}));
}

TEST(WgslBindings, OneBufferReadAsTwoElementTypesIsOneEntry) {
  EXPECT_EQ(entries_of(R"(
@group(0) @binding(2) var<storage, read> B4: array<vec4f>;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
)"),
            (Entries{{2, Kind::ReadOnlyStorage}, {1, Kind::ReadOnlyStorage}}));
}

TEST(WgslBindings, RejectsWhatItCannotRead) {
  const std::string twice = error_of(R"(
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
)");
  EXPECT_NE(twice.find("'probe'"), std::string::npos) << twice;
  EXPECT_NE(twice.find("@binding(2) declared twice with different address spaces"), std::string::npos) << twice;
  const std::string space = error_of("@group(0) @binding(3) var<workgroup> w: array<f32, 4>;");
  EXPECT_NE(space.find("unsupported address space var<workgroup> at @binding(3)"), std::string::npos) << space;
  EXPECT_NE(error_of("@group(0) @binding(1 var<uniform> p: P;").find("unterminated @binding"), std::string::npos);
  EXPECT_NE(error_of("@group(0) @binding(1) p: P;").find("@binding(1) without var<...>"), std::string::npos);
}
