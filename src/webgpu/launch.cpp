#include "webgpu/launch.h"

#include <numeric>

#include "forge/error.h"

namespace forge::webgpu {

gpu::Arg arg(const Tensor& t) { return arg(t, 0, t.nbytes()); }

gpu::Arg arg(const Tensor& t, uint64_t offset, uint64_t bytes) {
  // Bindings are never empty: a zero-sized tensor binds one word.
  return gpu::Arg{&t.buffer(), t.byte_offset() + offset, std::max<uint64_t>(4, (bytes + 3) / 4 * 4)};
}

std::array<uint32_t, 3> grid_1d(uint64_t groups, const gpu::Limits& limits) {
  uint64_t max_x = limits.max_workgroups_per_dim ? limits.max_workgroups_per_dim : 65535;
  if (groups <= max_x) return {uint32_t(std::max<uint64_t>(groups, 1)), 1, 1};
  uint64_t y = (groups + max_x - 1) / max_x;
  uint64_t x = (groups + y - 1) / y;
  return {uint32_t(x), uint32_t(y), 1};
}

std::array<uint32_t, 3> elementwise_grid(uint64_t count, const gpu::Limits& limits) {
  return grid_1d((count + kElementwiseBlock - 1) / kElementwiseBlock, limits);
}

void for_each_row_chunk(const gpu::Runtime& rt, const char* op, int64_t rows, uint64_t row_bytes,
                        const std::function<void(int64_t, int64_t)>& fn) {
  uint64_t limit = rt.binding_limit();
  uint64_t align = rt.limits().storage_offset_alignment;
  if (rows <= 0) return;
  if (uint64_t(rows) * row_bytes <= limit) {
    fn(0, rows);
    return;
  }
  // Chunk starts must be aligned: the row count of a chunk is a multiple of
  // align / gcd(row_bytes, align).
  uint64_t step = align / std::gcd(row_bytes ? row_bytes : 1, uint64_t(align));
  uint64_t per = row_bytes ? limit / row_bytes / step * step : uint64_t(rows);
  if (per == 0)
    throw DeviceError(std::string("[") + op + "] a row of " + std::to_string(row_bytes) +
                      " bytes cannot be split to fit the device's storage binding limit of " + std::to_string(limit) +
                      " bytes");
  for (int64_t r = 0; r < rows; r += int64_t(per)) fn(r, std::min<int64_t>(int64_t(per), rows - r));
}

gpu::Constant row_workgroup(int64_t cols) {
  uint32_t wg = 32;
  while (wg < 256 && int64_t(wg) < cols) wg *= 2;
  return {"WG", double(wg)};
}

}  // namespace forge::webgpu
