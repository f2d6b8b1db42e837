// Host side of the elementwise training updates and the MSE loss
// (shaders/train.wgsl, train_scale.wgsl, mse_loss.wgsl), split as rows of one element under the binding limit.
#include "forge_shaders.h"
#include "webgpu/launch.h"
#include "webgpu/train_kernels.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kAxpy{"axpy", shaders::train, "axpy"};
const gpu::Kernel kScale{"gradient_scale", shaders::train_scale};
const gpu::Kernel kClip{"clip", shaders::train, "clip"};
const gpu::Kernel kMse{"mse_loss", shaders::mse_loss};

struct TrainParams {
  uint32_t count;
  float alpha, max_norm;
  uint32_t pad;
};
static_assert(sizeof(TrainParams) == 16);

// fn(byte offset, bytes, element count) per chunk of dst's elements.
void for_each_chunk(const Tensor& dst, const char* op, const std::function<void(uint64_t, uint64_t, uint32_t)>& fn) {
  for_each_row_chunk(dst.device().runtime(), op, dst.numel(), 4, [&](int64_t first, int64_t count) {
    fn(uint64_t(first) * 4, uint64_t(count) * 4, uint32_t(count));
  });
}

std::array<uint32_t, 3> grid(const Tensor& t, uint32_t count) {
  return grid_1d((uint64_t(count) + 255) / 256, t.device().runtime().limits());
}

}  // namespace

void axpy_inplace(Tensor& dst, const Tensor& src, float alpha) {
  for_each_chunk(dst, "axpy", [&](uint64_t off, uint64_t bytes, uint32_t n) {
    launch(dst.device(), "axpy", kAxpy, TrainParams{n, alpha, 0, 0}, {arg(dst, off, bytes), arg(src, off, bytes)},
           grid(dst, n));
  });
}

void scale_inplace(Tensor& dst, float alpha) {
  for_each_chunk(dst, "gradient_scale", [&](uint64_t off, uint64_t bytes, uint32_t n) {
    launch(dst.device(), "gradient_scale", kScale, TrainParams{n, alpha, 0, 0}, {arg(dst, off, bytes)}, grid(dst, n));
  });
}

void clip_inplace(Tensor& dst, const Tensor& norm_sq, float max_norm) {
  for_each_chunk(dst, "clip_grad_by_norm", [&](uint64_t off, uint64_t bytes, uint32_t n) {
    launch(dst.device(), "clip_grad_by_norm", kClip, TrainParams{n, 0, max_norm, 0},
           {arg(dst, off, bytes), arg(norm_sq)}, grid(dst, n));
  });
}

void mse(const Tensor& pred, const Tensor& target, Tensor& out) {
  for_each_chunk(out, "mse_loss", [&](uint64_t off, uint64_t bytes, uint32_t n) {
    launch(out.device(), "mse_loss", kMse, TrainParams{n, 0, 0, 0},
           {arg(out, off, bytes), arg(pred, off, bytes), arg(target, off, bytes)}, grid(out, n));
  });
}

}  // namespace forge::webgpu
