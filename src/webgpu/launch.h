// Helpers for the WebGPU host side of ops: bindings from tensors, grids that
// respect the per-dimension workgroup limit, and splitting work so that no
// binding exceeds the device's storage binding limit.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <type_traits>

#include "forge/tensor.h"
#include "gpu/runtime.h"

namespace forge::webgpu {

// The whole tensor as a binding.
gpu::Arg arg(const Tensor& t);
// Bytes [offset, offset + bytes) of the tensor's data as a binding.
gpu::Arg arg(const Tensor& t, uint64_t offset, uint64_t bytes);

// A grid of `groups` workgroups as x * y, each within the device's limit.
// Kernels recover the linear index as wg.y * num_workgroups.x + wg.x.
std::array<uint32_t, 3> grid_1d(uint64_t groups, const gpu::Limits& limits);

// The grid of an elementwise kernel over `count` elements: a workgroup a
// block of shaders/elementwise_block.wgsl's 256 x EW_PER.
constexpr uint64_t kElementwiseBlock = 256 * 4;
std::array<uint32_t, 3> elementwise_grid(uint64_t count, const gpu::Limits& limits);

// The workgroup size of the one-row-a-workgroup kernels (shaders/row_reduce.wgsl's
// WG) for rows of `cols` values: cols rounded up to a power of two, 32 to 256.
// Idle lanes cost little on a GPU but a great deal on a CPU driver
// (SwiftShader runs each SIMD group of a workgroup with barriers as a
// coroutine), and short rows are what tiny models and decode steps have.
gpu::Constant row_workgroup(int64_t cols);

// Splits `rows` rows of `row_bytes` bytes each into runs whose byte size is
// within the binding limit and whose starts meet the offset alignment. Calls
// fn(first_row, row_count) for each run. Throws when one row is too large.
void for_each_row_chunk(const gpu::Runtime& rt, const char* op, int64_t rows, uint64_t row_bytes,
                        const std::function<void(int64_t, int64_t)>& fn);

// Records one dispatch of `kernel` with a parameter block (a struct mirrored
// field for field by the kernel's WGSL `Params`).
template <class Params>
void launch(const Device& device, const char* op, const gpu::Kernel& kernel, const Params& params,
            std::span<const gpu::Arg> args, std::array<uint32_t, 3> groups,
            std::span<const gpu::Constant> constants = {}) {
  static_assert(std::is_trivially_copyable_v<Params> && sizeof(Params) % 16 == 0,
                "parameter blocks are plain structs padded to 16 bytes, as WGSL uniforms are");
  gpu::Dispatch d;
  d.kernel = &kernel;
  d.constants = constants;
  d.params = &params;
  d.params_size = sizeof(Params);
  d.args = args;
  d.groups = groups;
  d.op = op;
  device.runtime().dispatch(d);
}
template <class Params>
void launch(const Device& device, const char* op, const gpu::Kernel& kernel, const Params& params,
            std::initializer_list<gpu::Arg> args, std::array<uint32_t, 3> groups,
            std::initializer_list<gpu::Constant> constants = {}) {
  launch(device, op, kernel, params, std::span<const gpu::Arg>(args.begin(), args.size()), groups,
         std::span<const gpu::Constant>(constants.begin(), constants.size()));
}

}  // namespace forge::webgpu
