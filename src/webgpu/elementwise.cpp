// Host side of the elementwise binary ops (shaders/binary.wgsl; scale is an
// OP of activation.wgsl, nn_activation.cpp).
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"
#include "webgpu/nn_kernels.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kBinary{"binary", {shaders::elementwise_block, shaders::binary}};

struct BinaryParams {
  uint32_t count;
  uint32_t pad[3];
};
static_assert(sizeof(BinaryParams) == 16);

enum BinaryOp : uint32_t { kAdd = 0, kSub = 1, kMul = 2 };

// Elementwise work split into bindings within the device's limit.
void for_each_chunk(const Tensor& t, const char* op, const std::function<void(uint64_t, uint64_t)>& fn) {
  for_each_row_chunk(t.device().runtime(), op, t.numel(), 4,
                     [&](int64_t first, int64_t count) { fn(uint64_t(first), uint64_t(count)); });
}

void binary(BinaryOp code, const char* op, const Tensor& a, const Tensor& b, Tensor& out) {
  for_each_chunk(out, op, [&](uint64_t first, uint64_t count) {
    BinaryParams p{uint32_t(count), {}};
    launch(out.device(), op, kBinary.kernel(), p, {arg(a, first * 4, count * 4), arg(b, first * 4, count * 4),
                                          arg(out, first * 4, count * 4)},
           elementwise_grid(count, out.device().runtime().limits()), {{"OP", double(code)}});
  });
}

}  // namespace

void add(const Tensor& a, const Tensor& b, Tensor& out) { binary(kAdd, "add", a, b, out); }
void sub(const Tensor& a, const Tensor& b, Tensor& out) { binary(kSub, "sub", a, b, out); }
void mul(const Tensor& a, const Tensor& b, Tensor& out) { binary(kMul, "mul", a, b, out); }

}  // namespace forge::webgpu
