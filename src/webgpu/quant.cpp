// Host side of dequantize, affine_dequantize and quantized_matmul
// (shaders/dequantize_bytes.wgsl; affine_quant.wgsl before affine_dequantize.wgsl and
// quantized_matmul.wgsl). Rows of W are split so that
// its words, scales and biases each fit one binding at aligned offsets; the
// matmul also splits the rows of x and of the output.
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/llama_chunk.h"
#include "webgpu/quant_kernels.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kBytes{"dequantize", shaders::dequantize_bytes};
const ComposedKernel kAffine{"affine_dequantize", {shaders::affine_quant, shaders::affine_dequantize}};
const ComposedKernel kQMatmul{"quantized_matmul", {shaders::affine_quant, shaders::quantized_matmul}};
const ComposedKernel kQMatmulSerial{"quantized_matmul_serial", {shaders::affine_quant, shaders::quantized_matmul},
                                    "main_serial"};
const ComposedKernel kQEmbed{"affine_embedding", {shaders::affine_quant, shaders::affine_embedding}};

struct BytesParams {
  uint32_t count;
  uint32_t pad[3];
};
static_assert(sizeof(BytesParams) == 16);

// Mirrors `struct Params` of shaders/affine_quant.wgsl.
struct QuantParams {
  uint32_t w_rows, cols, words, groups, x_rows, out_stride, out_first, has_bias;
};
static_assert(sizeof(QuantParams) == 32);

// Row chunks of W: fn(first_row, row_count).
void for_each_w_chunk(const Device& dev, const char* op, const QuantPlan& p, uint64_t out_row_bytes,
                      const std::function<void(int64_t, int64_t)>& fn) {
  uint64_t s_row = uint64_t(p.groups) * uint64_t(p.scale_bytes);
  for_each_row_chunk_multi(dev.runtime(), op, p.out, {uint64_t(p.words) * 4, s_row, out_row_bytes}, fn);
}

}  // namespace

void dequantize_bytes(const Tensor& bytes, Tensor& out) {
  const Device& dev = out.device();
  for_each_row_chunk_multi(dev.runtime(), "dequantize", bytes.numel(), {4, 16}, [&](int64_t first, int64_t count) {
    launch(dev, "dequantize", kBytes, BytesParams{uint32_t(count), {}},
           {arg(bytes, uint64_t(first) * 4, uint64_t(count) * 4), arg(out, uint64_t(first) * 16, uint64_t(count) * 16)},
           grid_1d((uint64_t(count) + 255) / 256, dev.runtime().limits()));
  });
}

void affine_dequantize(const Tensor& w, const Tensor& scales, const Tensor& biases, const QuantPlan& p,
                       Tensor& out) {
  const Device& dev = out.device();
  uint64_t w_row = uint64_t(p.words) * 4, s_row = uint64_t(p.groups) * uint64_t(p.scale_bytes);
  uint64_t o_row = uint64_t(p.in) * 4;
  for_each_w_chunk(dev, "affine_dequantize", p, o_row, [&](int64_t first, int64_t count) {
    QuantParams q{uint32_t(count), uint32_t(p.in), uint32_t(p.words), uint32_t(p.groups), 0, 0, 0, 0};
    uint64_t f = uint64_t(first), c = uint64_t(count);
    launch(dev, "affine_dequantize", kAffine.kernel(), q,
           {arg(w, f * w_row, c * w_row), arg(scales, f * s_row, c * s_row), arg(biases, f * s_row, c * s_row),
            arg(out, f * o_row, c * o_row)},
           grid_1d((c * uint64_t(p.in) + 255) / 256, dev.runtime().limits()),
           {{"BITS", double(p.bits)}, {"GROUP", double(p.group_size)}, {"SCALE_KIND", double(p.scale_kind)}});
  });
}

void quantized_matmul(const Tensor& x, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const Tensor* bias, const QuantPlan& p, int64_t m, Tensor& y) {
  const Device& dev = y.device();
  // A CPU driver takes main_serial (one invocation a feature, no barrier) at
  // every shape: on SwiftShader llama-fortunes' decode products (m = 1, in
  // 384 or 1024, 4 bits) cost 13 ms a dispatch there against 786 ms through
  // main. A GPU keeps 32 lanes a feature.
  const bool serial = dev.runtime().cpu_driver();
  const uint64_t feats = serial ? 64 : 8;  // features to a workgroup: SERIAL_WG or FEATS
  // Without a bias the slot still needs a buffer: x, never read.
  uint64_t w_row = uint64_t(p.words) * 4, s_row = uint64_t(p.groups) * uint64_t(p.scale_bytes);
  uint64_t x_row = uint64_t(p.in) * 4, y_row = uint64_t(p.out) * 4;
  for_each_row_chunk_multi(dev.runtime(), "quantized_matmul", m, {x_row, y_row}, [&](int64_t xf, int64_t xc) {
    for_each_w_chunk(dev, "quantized_matmul", p, 0, [&](int64_t first, int64_t count) {
      QuantParams q{uint32_t(count), uint32_t(p.in),  uint32_t(p.words),  uint32_t(p.groups),
                    uint32_t(xc),    uint32_t(p.out), uint32_t(first),    bias ? 1u : 0u};
      uint64_t f = uint64_t(first), c = uint64_t(count);
      uint64_t tiles = (uint64_t(xc) + 3) / 4;  // quantized_matmul.wgsl's TM rows of x
      uint64_t blocks = (c + feats - 1) / feats;  // and feats rows of W to a workgroup
      launch(dev, "quantized_matmul", (serial ? kQMatmulSerial : kQMatmul).kernel(), q,
             {arg(w, f * w_row, c * w_row), arg(scales, f * s_row, c * s_row), arg(biases, f * s_row, c * s_row),
              arg(y, uint64_t(xf) * y_row, uint64_t(xc) * y_row), arg(x, uint64_t(xf) * x_row, uint64_t(xc) * x_row),
              bias ? arg(*bias, f * 4, c * 4) : arg(x, uint64_t(xf) * x_row, uint64_t(xc) * x_row)},
             grid_1d(blocks * tiles, dev.runtime().limits()),
             {{"BITS", double(p.bits)}, {"GROUP", double(p.group_size)}, {"SCALE_KIND", double(p.scale_kind)}});
    });
  });
}

void affine_embedding(const Tensor& ids, const Tensor& w, const Tensor& scales, const Tensor& biases,
                      const QuantPlan& p, Tensor& out) {
  // The table is bound whole (an id may select any row); the ids and output
  // are split by rows under the binding limit.
  const Device& dev = out.device();
  const int64_t R = ids.numel();
  uint64_t o_row = uint64_t(p.in) * 4;
  for_each_row_chunk_multi(dev.runtime(), "affine_embedding", R, {4, o_row}, [&](int64_t first, int64_t count) {
    QuantParams q{uint32_t(p.out), uint32_t(p.in), uint32_t(p.words), uint32_t(p.groups), uint32_t(count), 0, 0, 0};
    uint64_t f = uint64_t(first), c = uint64_t(count);
    launch(dev, "affine_embedding", kQEmbed.kernel(), q,
           {arg(w), arg(scales), arg(biases), arg(out, f * o_row, c * o_row), arg(ids, f * 4, c * 4)},
           grid_1d((c * uint64_t(p.in) + 255) / 256, dev.runtime().limits()),
           {{"BITS", double(p.bits)}, {"GROUP", double(p.group_size)}, {"SCALE_KIND", double(p.scale_kind)}});
  });
}

}  // namespace forge::webgpu
