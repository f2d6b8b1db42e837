// Host side of sum_rows (and sum_rows_pair) and sumsq (shaders/reduce.wgsl): a first pass of
// partial sums over blocks of rows (or of values), a second pass over the
// partials (for sum_rows, the first pass's kernel over them as one block).
// Input split under the binding limit accumulates into the same partials,
// so the result does not depend on the split's boundaries beyond f32
// rounding.
#include <algorithm>
#include <array>

#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/nn_kernels.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kColPartial{"col_partial", shaders::reduce, "col_partial"};
const ComposedKernel kColPartialPair{"col_partial_pair", {shaders::reduce, shaders::col_partial_pair},
                                     "col_partial_pair"};
const gpu::Kernel kSqPartial{"sq_partial", shaders::reduce, "sq_partial"};
const gpu::Kernel kSqFinal{"sq_final", shaders::reduce, "sq_final"};

struct ReduceParams {
  uint32_t rows, cols, groups, accumulate;
};
static_assert(sizeof(ReduceParams) == 16);

constexpr uint64_t kColTile = 64;       // columns per workgroup of col_partial
constexpr int64_t kRowsPerGroup = 64;   // rows a block should hold at least
constexpr uint64_t kMaxColGroups = 64;
constexpr uint64_t kValuesPerGroup = 4096;
constexpr uint64_t kMaxSqGroups = 2048;  // enough loads in flight to stream at memory speed

// sum_rows of x, and of y into out_y where y is given (col_partial_pair: both
// in each dispatch).
void sum_rows_of(const Tensor& x, const Tensor* y, int64_t rows, int64_t cols, Tensor& out, Tensor* out_y) {
  const Device& dev = out.device();
  const gpu::Runtime& rt = dev.runtime();
  const gpu::Kernel& kernel = y ? kColPartialPair.kernel() : kColPartial;
  uint64_t row_bytes = uint64_t(cols) * 4;
  // Row blocks: enough for parallelism on tall inputs, few enough that the
  // partials [groups, cols] fit one binding.
  uint64_t groups = std::clamp<uint64_t>(uint64_t(rows / kRowsPerGroup), 1, kMaxColGroups);
  groups = std::max<uint64_t>(1, std::min(groups, rt.binding_limit() / std::max<uint64_t>(row_bytes, 4)));
  auto partials_of = [&](Tensor& o) {
    return groups == 1 ? o : Tensor::empty({int64_t(groups), cols}, DType::F32, dev);
  };
  Tensor partials = partials_of(out), partials_y = y ? partials_of(*out_y) : Tensor();
  // Pass 1: column tiles x row blocks; pass 2: the column tiles alone.
  const std::array<uint32_t, 3> grid = grid_1d((uint64_t(cols) + kColTile - 1) / kColTile, rt.limits());
  std::array<uint32_t, 3> block_grid = grid;
  block_grid[2] = uint32_t(groups);
  bool first_chunk = true;
  for_each_row_chunk(rt, "sum_rows", rows, row_bytes, [&](int64_t first, int64_t count) {
    ReduceParams p{uint32_t(count), uint32_t(cols), uint32_t(groups), first_chunk ? 0u : 1u};
    const uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    if (y)
      launch(dev, "sum_rows", kernel, p, {arg(x, off, bytes), arg(partials), arg(*y, off, bytes), arg(partials_y)},
             block_grid);
    else launch(dev, "sum_rows", kernel, p, {arg(x, off, bytes), arg(partials)}, block_grid);
    first_chunk = false;
  });
  if (groups == 1) return;
  // The partials as the rows of one block.
  ReduceParams p{uint32_t(groups), uint32_t(cols), 1, 0};
  if (y) launch(dev, "sum_rows", kernel, p, {arg(partials), arg(out), arg(partials_y), arg(*out_y)}, grid);
  else launch(dev, "sum_rows", kernel, p, {arg(partials), arg(out)}, grid);
}

}  // namespace

void sum_rows(const Tensor& x, int64_t rows, int64_t cols, Tensor& out) {
  sum_rows_of(x, nullptr, rows, cols, out, nullptr);
}

void sum_rows_pair(const Tensor& x, const Tensor& y, int64_t rows, int64_t cols, Tensor& out_x, Tensor& out_y) {
  sum_rows_of(x, &y, rows, cols, out_x, &out_y);
}

void sumsq(const Tensor& x, Tensor& out) { sumsq_many({x}, out); }

void sumsq_many(const std::vector<Tensor>& xs, Tensor& out) {
  const Device& dev = out.device();
  const gpu::Runtime& rt = dev.runtime();
  uint64_t n = 0;
  for (const Tensor& x : xs) n = std::max<uint64_t>(n, uint64_t(x.numel()));
  uint64_t groups = std::clamp<uint64_t>(n / kValuesPerGroup, 1, kMaxSqGroups);
  groups = std::max<uint64_t>(1, std::min(groups, rt.binding_limit() / 4));
  Tensor partials = groups == 1 ? out : Tensor::empty({int64_t(groups)}, DType::F32, dev);
  bool first_chunk = true;
  for (const Tensor& x : xs)
    for_each_row_chunk(rt, "sumsq", x.numel(), 4, [&](int64_t first, int64_t count) {
      ReduceParams p{uint32_t(count), 1, uint32_t(groups), first_chunk ? 0u : 1u};
      launch(dev, "sumsq", kSqPartial, p, {arg(x, uint64_t(first) * 4, uint64_t(count) * 4), arg(partials)},
             {uint32_t(groups), 1, 1});
      first_chunk = false;
    });
  if (first_chunk) dev.runtime().clear(out.buffer(), out.byte_offset(), 4);  // nothing to sum
  if (groups == 1) return;
  ReduceParams p{0, 1, uint32_t(groups), 0};
  launch(dev, "sumsq", kSqFinal, p, {arg(partials), arg(out)}, {1, 1, 1});
}

}  // namespace forge::webgpu
