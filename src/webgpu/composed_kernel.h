// Kernels built from several embedded WGSL files. WGSL has no includes, so a
// shared snippet such as shaders/philox.wgsl (the dropout random stream, one
// definition for every kernel that draws from it) is prepended as text: the
// source is concatenated once, when the kernel constant is defined, and the
// pipeline cache keys on the constant's address as for any other kernel.
#pragma once
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/runtime.h"

namespace forge::webgpu {

class ComposedKernel {
 public:
  ComposedKernel(std::string_view name, std::initializer_list<std::string_view> parts,
                 std::string_view entry = "main")
      : ComposedKernel(name, std::vector<std::string_view>(parts), entry) {}
  ComposedKernel(std::string_view name, const std::vector<std::string_view>& parts, std::string_view entry = "main") {
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

// A composed kernel whose workgroup reductions (wg_sum, wg_max, run_sum4,
// strided_sum4) come from shaders/reduce_tree.wgsl, or from
// shaders/reduce_subgroup.wgsl where the device allows subgroup sums
// (gpu::Runtime::subgroup_size): that form is built on first use for the
// device's subgroup size. Both give the same results up to the order of the
// additions.
class ReducingKernel {
 public:
  ReducingKernel(std::string_view name, std::initializer_list<std::string_view> parts,
                 std::string_view entry = "main");
  // The same with other snippets for the two forms: the norms' row layouts
  // (shaders/row_reduce.wgsl, a workgroup to a row, and row_subgroup.wgsl, a
  // subgroup to a row; launched by row_launch below).
  ReducingKernel(std::string_view name, std::initializer_list<std::string_view> parts, std::string_view tree_form,
                 std::string_view subgroup_form, std::string_view entry = "main");
  ReducingKernel(const ReducingKernel&) = delete;
  ReducingKernel& operator=(const ReducingKernel&) = delete;

  const gpu::Kernel& kernel(const gpu::Runtime& rt) const;
  // The tree form whatever the device has.
  const gpu::Kernel& tree_kernel() const { return tree_.kernel(); }

 private:
  std::string_view name_, entry_, subgroup_form_;
  std::vector<std::string_view> parts_;
  ComposedKernel tree_;
  mutable std::mutex mu_;
  mutable std::map<uint32_t, std::unique_ptr<ComposedKernel>> by_subgroup_;  // stable addresses
};

// A launch of a norm kernel (a ReducingKernel with the row layouts of
// shaders/row_reduce.wgsl and row_subgroup.wgsl) over `rows` rows of `cols`
// values. A subgroup to a row, 256 / size rows a workgroup, where the device
// has subgroup sums and rows enough to keep a large GPU busy with one
// subgroup each (at least FORGE_ROW_SUBGROUP_ROWS, default
// kRowSubgroupRows); else a workgroup of row_workgroup(cols) to a row. On an
// H100 a layernorm over 8192 rows of 768 took 28-29 us a subgroup to a row
// against 44 a workgroup to a row; but with fewer rows than that most of the
// GPU sits idle: an RMS norm over 1024 rows of 960 took 30 us (SmolLM2-360M's
// prefill 1 ms slower over its 62) and over one row 24 us, and from 1024 rows
// on SmolLM2-360M's fine-tuning step (2048 rows) ran 1.5 ms slower.
constexpr int64_t kRowSubgroupRows = 4096;
struct RowLaunch {
  const gpu::Kernel* kernel;
  std::array<uint32_t, 3> groups;
  gpu::Constant workgroup;
};
RowLaunch row_launch(const ReducingKernel& k, const gpu::Runtime& rt, int64_t rows, int64_t cols);

}  // namespace forge::webgpu
