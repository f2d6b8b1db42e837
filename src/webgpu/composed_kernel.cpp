#include "webgpu/composed_kernel.h"

#include "forge_shaders.h"

namespace forge::webgpu {

namespace {

std::vector<std::string_view> with_tree(std::initializer_list<std::string_view> parts) {
  std::vector<std::string_view> all(parts);
  all.push_back(shaders::reduce_tree);  // WGSL declarations may follow their uses
  return all;
}

}  // namespace

ReducingKernel::ReducingKernel(std::string_view name, std::initializer_list<std::string_view> parts,
                               std::string_view entry)
    : name_(name), entry_(entry), parts_(parts), tree_(name, with_tree(parts), entry) {}

const gpu::Kernel& ReducingKernel::kernel(const gpu::Runtime& rt) const {
  const uint32_t size = rt.subgroup_size();
  if (size == 0) return tree_.kernel();
  std::lock_guard<std::mutex> lock(mu_);
  auto& made = by_subgroup_[size];
  if (!made) {
    // `enable` must open the module. ComposedKernel copies the parts into
    // its source, so the header need not outlive this call.
    const std::string header = "enable subgroups;\nconst SUBGROUP_SIZE: u32 = " + std::to_string(size) + "u;";
    std::vector<std::string_view> all{header};
    all.insert(all.end(), parts_.begin(), parts_.end());
    all.push_back(shaders::reduce_subgroup);
    made = std::make_unique<ComposedKernel>(name_, all, entry_);
  }
  return made->kernel();
}

}  // namespace forge::webgpu
