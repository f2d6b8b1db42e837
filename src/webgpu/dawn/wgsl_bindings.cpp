#include "webgpu/dawn/wgsl_bindings.h"

#include <algorithm>
#include <string>

#include "forge/error.h"

namespace forge::webgpu {

namespace {

// The source without // comments, so commented-out declarations are ignored.
std::string strip_comments(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '/' && i + 1 < src.size() && src[i + 1] == '/') {
      while (i < src.size() && src[i] != '\n') ++i;
    }
    if (i < src.size()) out += src[i];
  }
  return out;
}

std::string trimmed(std::string s) {
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n'; }), s.end());
  return s;
}

}  // namespace

std::vector<WgslBinding> wgsl_bindings(std::string_view source, std::string_view kernel) {
  const std::string src = strip_comments(source);
  auto fail = [&](const std::string& what) {
    return GpuError("[webgpu] kernel '" + std::string(kernel) + "': " + what);
  };
  std::vector<WgslBinding> out;
  for (size_t at = src.find("@binding("); at != std::string::npos; at = src.find("@binding(", at + 1)) {
    size_t close = src.find(')', at);
    if (close == std::string::npos) throw fail("unterminated @binding");
    uint32_t binding = uint32_t(std::stoul(src.substr(at + 9, close - at - 9)));
    size_t var = src.find("var<", close);
    size_t end = var == std::string::npos ? var : src.find('>', var);
    if (end == std::string::npos) throw fail("@binding(" + std::to_string(binding) + ") without var<...>");
    std::string space = trimmed(src.substr(var + 4, end - var - 4));
    WgslBinding::Kind kind;
    if (space == "uniform") kind = WgslBinding::Kind::Uniform;
    else if (space == "storage" || space == "storage,read") kind = WgslBinding::Kind::ReadOnlyStorage;
    else if (space == "storage,read_write") kind = WgslBinding::Kind::Storage;
    else throw fail("unsupported address space var<" + space + "> at @binding(" + std::to_string(binding) + ")");
    // A binding may name two variables (one buffer read as f32s by one entry
    // point and as vec4s by another) only with the same address space: the
    // layout has one entry per binding.
    auto same = std::find_if(out.begin(), out.end(), [&](const WgslBinding& b) { return b.binding == binding; });
    if (same == out.end()) out.push_back({binding, kind});
    else if (same->kind != kind)
      throw fail("@binding(" + std::to_string(binding) + ") declared twice with different address spaces");
  }
  return out;
}

}  // namespace forge::webgpu
