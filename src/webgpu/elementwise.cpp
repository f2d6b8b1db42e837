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

// Split into bindings within the device's limit, as the activations are.
void binary(BinaryOp code, const char* op, const Tensor& a, const Tensor& b, Tensor& out) {
  const Device& dev = out.device();
  for_each_row_chunk(dev.runtime(), op, out.numel(), 4, [&](int64_t first, int64_t count) {
    BinaryParams p{uint32_t(count), {}};
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, op, kBinary.kernel(), p, {arg(a, off, bytes), arg(b, off, bytes), arg(out, off, bytes)},
           elementwise_grid(uint64_t(count), dev.runtime().limits()), {{"OP", double(code)}});
  });
}

}  // namespace

void add(const Tensor& a, const Tensor& b, Tensor& out) { binary(kAdd, "add", a, b, out); }
void sub(const Tensor& a, const Tensor& b, Tensor& out) { binary(kSub, "sub", a, b, out); }
void mul(const Tensor& a, const Tensor& b, Tensor& out) { binary(kMul, "mul", a, b, out); }

}  // namespace forge::webgpu
