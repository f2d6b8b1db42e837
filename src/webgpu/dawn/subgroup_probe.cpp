// The probe behind AdapterInfo::subgroup_size. WGSL leaves how a workgroup's
// invocations fall into subgroups to the implementation; the kernels' subgroup
// sums (shaders/reduce_subgroup.wgsl) need each subgroup to be a run of
// consecutive local invocation indices, lane i at index (first + i), with
// every lane active. One dispatch of one workgroup checks that here, once per
// device, before any kernel relies on it.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "forge/error.h"
#include "webgpu/dawn/dawn_runtime.h"

namespace forge::webgpu {

namespace {

constexpr uint32_t kProbeInvocations = 256;  // the workgroup size of the kernels that sum by subgroup

// Each invocation writes its subgroup's size, and 1 in the high bit where
// its lane id is its index's offset from the subgroup's first index, the
// subgroup has as many active lanes as its size, and that first index is a
// multiple of the size.
const gpu::Kernel kProbe{"subgroup_probe", R"(
enable subgroups;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(subgroup_invocation_id) lane: u32,
        @builtin(subgroup_size) size: u32) {
  let first = subgroupMin(lid);
  let lanes = subgroupAdd(1u);
  let linear = lid - first == lane && lanes == size && first % size == 0u;
  out[lid] = size | select(0u, 0x80000000u, linear);
}
)"};

}  // namespace

uint32_t DawnRuntime::probe_subgroup_size() {
  if (!info_.subgroups || limits_.subgroup_min == 0 || limits_.subgroup_min != limits_.subgroup_max) return 0;
  if (const char* env = std::getenv("FORGE_SUBGROUPS"); env && std::strcmp(env, "0") == 0) return 0;
  const uint32_t size = limits_.subgroup_min;
  // At least 4 lanes: strided_sum4 keeps a stride of 2 within a subgroup.
  if (size < 4 || kProbeInvocations % size != 0) return 0;
  std::vector<uint32_t> got(kProbeInvocations);
  try {
    auto out = allocate(kProbeInvocations * 4);
    const gpu::Arg args[] = {{out.get(), 0, kProbeInvocations * 4}};
    gpu::Dispatch d;
    d.kernel = &kProbe;
    d.args = args;
    d.op = "subgroup_probe";
    dispatch(d);
    start_download(*out, 0, kProbeInvocations * 4)->finish(got.data());
  } catch (const GpuError&) {
    // A driver that offers the feature but fails the probe (its compiler,
    // its dispatch) gets the workgroup-memory form, not a device error.
    return 0;
  }
  reset_kernel_times();
  for (uint32_t v : got)
    if (v != (size | 0x80000000u)) return 0;
  return size;
}

}  // namespace forge::webgpu
