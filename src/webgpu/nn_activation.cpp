// Host side of the activations, scale and the activations' gradients
// (shaders/activation.wgsl, activation_bwd.wgsl): elementwise, split as rows
// of one element.
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/nn_kernels.h"

namespace forge::webgpu {

namespace {

// Both after gelu.wgsl: one gelu for them and the matrix-vector epilogue.
const ComposedKernel kActivation{"activation", {shaders::gelu, shaders::elementwise_block, shaders::activation}};
const ComposedKernel kActivationBwd{"activation_bwd",
                                   {shaders::gelu, shaders::elementwise_block, shaders::activation_bwd}};

// Mirrors `struct Params` of both shaders (alpha: activation.wgsl's scale).
struct ActivationParams {
  uint32_t count;
  float alpha;
  uint32_t pad[2];
};
static_assert(sizeof(ActivationParams) == 16);

// The OP constant of both shaders.
double op_code(Activation act) {
  switch (act) {
    case Activation::Gelu: return 0;
    case Activation::Relu: return 1;
    case Activation::Silu: return 2;
  }
  return 0;
}
constexpr double kScaleOp = 3;  // activation.wgsl's OP for x * alpha (no backward)

const char* op_name(Activation act, bool bwd) {
  switch (act) {
    case Activation::Gelu: return bwd ? "gelu_bwd" : "gelu";
    case Activation::Relu: return bwd ? "relu_bwd" : "relu";
    case Activation::Silu: return bwd ? "silu_bwd" : "silu";
  }
  return "activation";
}

}  // namespace

void activation(Activation act, const Tensor& x, Tensor& y) {
  const char* op = op_name(act, false);
  const Device& dev = y.device();
  for_each_row_chunk(dev.runtime(), op, x.numel(), 4, [&](int64_t first, int64_t count) {
    ActivationParams p{uint32_t(count), 0.0f, {}};
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, op, kActivation.kernel(), p, {arg(x, off, bytes), arg(y, off, bytes)},
           elementwise_grid(uint64_t(count), dev.runtime().limits()), {{"OP", op_code(act)}});
  });
}

void activation_bwd(Activation act, const Tensor& x, const Tensor& dy, Tensor& dx) {
  const char* op = op_name(act, true);
  const Device& dev = dx.device();
  for_each_row_chunk(dev.runtime(), op, x.numel(), 4, [&](int64_t first, int64_t count) {
    ActivationParams p{uint32_t(count), 0.0f, {}};
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, op, kActivationBwd.kernel(), p, {arg(x, off, bytes), arg(dy, off, bytes), arg(dx, off, bytes)},
           elementwise_grid(uint64_t(count), dev.runtime().limits()), {{"OP", op_code(act)}});
  });
}

void scale(const Tensor& x, float alpha, Tensor& out) {
  const Device& dev = out.device();
  for_each_row_chunk(dev.runtime(), "scale", x.numel(), 4, [&](int64_t first, int64_t count) {
    ActivationParams p{uint32_t(count), alpha, {}};
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, "scale", kActivation.kernel(), p, {arg(x, off, bytes), arg(out, off, bytes)},
           elementwise_grid(uint64_t(count), dev.runtime().limits()), {{"OP", kScaleOp}});
  });
}

}  // namespace forge::webgpu
