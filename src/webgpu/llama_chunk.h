// Splitting rows under the storage binding limit when one row index selects
// rows of several tensors of different widths (top_k's values, winners and
// indices; a quantized weight's words, scales and biases): every chunk's
// byte range fits the limit and starts at an aligned offset in each tensor.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <string>

#include "forge/error.h"
#include "gpu/runtime.h"

namespace forge::webgpu {

// Calls fn(first_row, row_count) for runs of rows such that, for each width
// w in row_bytes, row_count * w is within the binding limit and first_row * w
// is a multiple of the storage offset alignment. DeviceError when a single
// (aligned) run cannot fit.
inline void for_each_row_chunk_multi(const gpu::Runtime& rt, const char* op, int64_t rows,
                                     std::initializer_list<uint64_t> row_bytes,
                                     const std::function<void(int64_t, int64_t)>& fn) {
  if (rows <= 0) return;
  uint64_t limit = rt.binding_limit();
  uint64_t align = rt.limits().storage_offset_alignment;
  uint64_t widest = 1;
  for (uint64_t w : row_bytes) widest = std::max(widest, w);
  if (uint64_t(rows) * widest <= limit) {
    fn(0, rows);
    return;
  }
  uint64_t step = 1, per = UINT64_MAX;
  for (uint64_t w : row_bytes) {
    if (w == 0) continue;
    step = std::lcm(step, align / std::gcd(w, align));
    per = std::min(per, limit / w);
  }
  per = per / step * step;
  if (per == 0)
    throw DeviceError(std::string("[") + op + "] rows of " + std::to_string(widest) +
                      " bytes cannot be split into aligned runs within the device's storage binding limit of " +
                      std::to_string(limit) + " bytes");
  for (int64_t r = 0; r < rows; r += int64_t(per)) fn(r, std::min<int64_t>(int64_t(per), rows - r));
}

}  // namespace forge::webgpu
