#include "webgpu/composed_kernel.h"

#include <cstdlib>

#include "forge_shaders.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

std::vector<std::string_view> with_form(std::initializer_list<std::string_view> parts, std::string_view form) {
  std::vector<std::string_view> all(parts);
  all.push_back(form);  // WGSL declarations may follow their uses
  return all;
}

}  // namespace

ReducingKernel::ReducingKernel(std::string_view name, std::initializer_list<std::string_view> parts,
                               std::string_view entry)
    : ReducingKernel(name, parts, shaders::reduce_tree, shaders::reduce_subgroup, entry) {}

ReducingKernel::ReducingKernel(std::string_view name, std::initializer_list<std::string_view> parts,
                               std::string_view tree_form, std::string_view subgroup_form, std::string_view entry)
    : name_(name),
      entry_(entry),
      subgroup_form_(subgroup_form),
      parts_(parts),
      tree_(name, with_form(parts, tree_form), entry) {}

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
    all.push_back(subgroup_form_);
    made = std::make_unique<ComposedKernel>(name_, all, entry_);
  }
  return made->kernel();
}

RowLaunch row_launch(const ReducingKernel& k, const gpu::Runtime& rt, int64_t rows, int64_t cols) {
  // Read at each call, so that a test can take the subgroup layout on a few rows.
  const char* env = std::getenv("FORGE_ROW_SUBGROUP_ROWS");
  const int64_t from = env && *env ? std::atoll(env) : kRowSubgroupRows;
  if (const uint64_t size = rt.subgroup_size(); size != 0 && rows >= from) {
    const uint64_t per = 256 / size;  // subgroup sizes are powers of two up to 256
    return {&k.kernel(rt), grid_1d((uint64_t(rows) + per - 1) / per, rt.limits()), {"WG", 256.0}};
  }
  return {&k.tree_kernel(), grid_1d(uint64_t(rows), rt.limits()), row_workgroup(cols)};
}

}  // namespace forge::webgpu
