// Host side of silu_gate_fused, silu_gate_packed and their backwards, top_k
// and conv1d_depthwise (shaders/silu_gate.wgsl, silu_gate_bwd.wgsl,
// silu_gate_packed_bwd.wgsl, top_k_select.wgsl, top_k_place.wgsl,
// conv1d_depthwise.wgsl).
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/launch.h"
#include "webgpu/llama_chunk.h"
#include "webgpu/llama_kernels.h"

namespace forge::webgpu {

namespace {

const gpu::Kernel kSiluGate{"silu_gate", shaders::silu_gate};
const ComposedKernel kSiluGateBwd{"silu_gate_bwd", {shaders::silu_gate_grads, shaders::silu_gate_bwd}};
const ComposedKernel kSiluGatePackedBwd{"silu_gate_packed_bwd",
                                        {shaders::silu_gate_grads, shaders::silu_gate_packed_bwd}};
const gpu::Kernel kTopKSelect{"top_k_select", shaders::top_k_select};
const gpu::Kernel kTopKPlace{"top_k_place", shaders::top_k_place};
const gpu::Kernel kConv1d{"conv1d_depthwise", shaders::conv1d_depthwise};

struct CountParams {
  uint32_t count;
  uint32_t pad[3];
};
static_assert(sizeof(CountParams) == 16);

struct SiluGateParams {
  uint32_t count, n, stride, gate_offset;
};
static_assert(sizeof(SiluGateParams) == 16);

struct TopKSelectParams {
  uint32_t rows, n, k, pad;
};
static_assert(sizeof(TopKSelectParams) == 16);

struct TopKPlaceParams {
  uint32_t count, k;
  uint32_t pad[2];
};
static_assert(sizeof(TopKPlaceParams) == 16);

struct Conv1dParams {
  uint32_t count, first_row, dim, seq;
};
static_assert(sizeof(Conv1dParams) == 16);

}  // namespace

void silu_gate(const Tensor& up, const Tensor& gate, Tensor& out) {
  const Device& dev = out.device();
  for_each_row_chunk(dev.runtime(), "silu_gate_fused", out.numel(), 4, [&](int64_t first, int64_t count) {
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    // One row of `count` elements: stride and offset play no part.
    launch(dev, "silu_gate_fused", kSiluGate, SiluGateParams{uint32_t(count), uint32_t(count), 0, 0},
           {arg(up, off, bytes), arg(gate, off, bytes), arg(out, off, bytes)},
           grid_1d((uint64_t(count) + 255) / 256, dev.runtime().limits()));
  });
}

void silu_gate_bwd(const Tensor& up, const Tensor& gate, const Tensor& dy, Tensor& grad_up, Tensor& grad_gate) {
  const Device& dev = dy.device();
  const char* op = "silu_gate_fused_backward";
  for_each_row_chunk(dev.runtime(), op, dy.numel(), 4, [&](int64_t first, int64_t count) {
    uint64_t off = uint64_t(first) * 4, bytes = uint64_t(count) * 4;
    launch(dev, op, kSiluGateBwd.kernel(), CountParams{uint32_t(count), {}},
           {arg(up, off, bytes), arg(gate, off, bytes), arg(dy, off, bytes), arg(grad_up, off, bytes),
            arg(grad_gate, off, bytes)},
           grid_1d((uint64_t(count) + 255) / 256, dev.runtime().limits()));
  });
}

// gu [rows, 2n] is bound twice (read-only bindings may alias), once as up
// and once as gate.
void silu_gate_packed(const Tensor& gu, int64_t rows, int64_t n, Tensor& out) {
  const Device& dev = out.device();
  const char* op = "silu_gate_packed";
  const uint64_t in_row = uint64_t(n) * 8, out_row = uint64_t(n) * 4;
  for_each_row_chunk_multi(dev.runtime(), op, rows, {in_row, out_row}, [&](int64_t first, int64_t count) {
    const uint64_t elems = uint64_t(count) * uint64_t(n);
    const gpu::Arg in = arg(gu, uint64_t(first) * in_row, uint64_t(count) * in_row);
    launch(dev, op, kSiluGate, SiluGateParams{uint32_t(elems), uint32_t(n), uint32_t(2 * n), uint32_t(n)},
           {in, in, arg(out, uint64_t(first) * out_row, uint64_t(count) * out_row)},
           grid_1d((elems + 255) / 256, dev.runtime().limits()));
  });
}

void silu_gate_packed_bwd(const Tensor& gu, const Tensor& dy, int64_t rows, int64_t n, Tensor& dgu) {
  const Device& dev = dy.device();
  const char* op = "silu_gate_packed_backward";
  const uint64_t in_row = uint64_t(n) * 8, out_row = uint64_t(n) * 4;
  for_each_row_chunk_multi(dev.runtime(), op, rows, {in_row, out_row}, [&](int64_t first, int64_t count) {
    const uint64_t elems = uint64_t(count) * uint64_t(n);
    launch(dev, op, kSiluGatePackedBwd.kernel(), SiluGateParams{uint32_t(elems), uint32_t(n), 0, 0},
           {arg(gu, uint64_t(first) * in_row, uint64_t(count) * in_row),
            arg(dy, uint64_t(first) * out_row, uint64_t(count) * out_row),
            arg(dgu, uint64_t(first) * in_row, uint64_t(count) * in_row)},
           grid_1d((elems + 255) / 256, dev.runtime().limits()));
  });
}

void top_k(const Tensor& x, int64_t rows, int64_t n, int64_t k, Tensor& out) {
  const Device& dev = out.device();
  uint64_t x_row = uint64_t(n) * 4, cand_row = uint64_t(k) * 8, out_row = uint64_t(k) * 4;
  Tensor cand = Tensor::empty({rows, k, 2}, DType::U32, dev);  // [rows, k, (key, index)]
  for_each_row_chunk_multi(dev.runtime(), "top_k", rows, {x_row, cand_row, out_row}, [&](int64_t first, int64_t count) {
    launch(dev, "top_k", kTopKSelect, TopKSelectParams{uint32_t(count), uint32_t(n), uint32_t(k), 0},
           {arg(x, uint64_t(first) * x_row, uint64_t(count) * x_row),
            arg(cand, uint64_t(first) * cand_row, uint64_t(count) * cand_row)},
           grid_1d(uint64_t(count), dev.runtime().limits()));
    uint64_t winners = uint64_t(count) * uint64_t(k);
    launch(dev, "top_k", kTopKPlace, TopKPlaceParams{uint32_t(winners), uint32_t(k), {}},
           {arg(cand, uint64_t(first) * cand_row, uint64_t(count) * cand_row),
            arg(out, uint64_t(first) * out_row, uint64_t(count) * out_row)},
           grid_1d((winners + 255) / 256, dev.runtime().limits()));
  });
}

void conv1d_depthwise(const Tensor& x, const Tensor& w, const Tensor& b, const Conv1dPlan& plan, Tensor& out) {
  const Device& dev = out.device();
  uint64_t row_bytes = uint64_t(plan.seq) * 4;
  for_each_row_chunk(dev.runtime(), "conv1d_depthwise", plan.rows, row_bytes, [&](int64_t first, int64_t count) {
    uint64_t elements = uint64_t(count) * uint64_t(plan.seq);
    uint64_t off = uint64_t(first) * row_bytes, bytes = uint64_t(count) * row_bytes;
    launch(dev, "conv1d_depthwise", kConv1d,
           Conv1dParams{uint32_t(elements), uint32_t(first), uint32_t(plan.dim), uint32_t(plan.seq)},
           {arg(x, off, bytes), arg(w), arg(b), arg(out, off, bytes)},
           grid_1d((elements + 255) / 256, dev.runtime().limits()));
  });
}

}  // namespace forge::webgpu
