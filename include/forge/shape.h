// Tensor shapes: a list of non-negative extents, row-major.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace forge {

using Shape = std::vector<int64_t>;

// Product of the extents (1 for a scalar shape {}).
int64_t numel(const Shape& s);
// "[2, 16, 1000]"
std::string shape_str(const Shape& s);

}  // namespace forge
