// The chunk size of split_rows_for_binding for a table uploaded chunk by
// chunk from the host, for loaders that upload rows straight from a file's
// bytes (models/common/weights.cpp) rather than from a host Tensor.
#pragma once
#include <cstdint>

#include "forge/device.h"

namespace forge {

// The rows of `row_bytes` bytes each that one chunk (a buffer of its own)
// holds on `device`: all `rows` (at least 1) on the CPU. DeviceError when one
// row exceeds a storage binding.
int64_t rows_per_binding(int64_t rows, uint64_t row_bytes, const Device& device);

}  // namespace forge
