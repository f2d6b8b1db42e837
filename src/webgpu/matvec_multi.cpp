// Host side of shaders/matvec_multi.wgsl: the decode-step fusions of
// matmul_transb_many (MODE 0) and silu_gate_matmul (MODE 1).
#include "forge_shaders.h"
#include "webgpu/composed_kernel.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"

namespace forge::webgpu {

namespace {

// One pair per weight dtype (its weights snippet): f32, or bf16 widened as read.
const ReducingKernel kMulti{"matvec_multi", {shaders::weights_f32, shaders::norm_prologue, shaders::matvec_multi}};
const ReducingKernel kMultiSerial{"matvec_multi_serial",
                                  {shaders::weights_f32, shaders::norm_prologue, shaders::matvec_multi}, "main_serial"};
const ReducingKernel kMultiBf16{"matvec_multi", {shaders::weights_bf16, shaders::norm_prologue, shaders::matvec_multi}};
const ReducingKernel kMultiBf16Serial{"matvec_multi_serial",
                                      {shaders::weights_bf16, shaders::norm_prologue, shaders::matvec_multi},
                                      "main_serial"};

// Mirrors `struct Params` of shaders/matvec_multi.wgsl.
struct MultiParams {
  uint32_t m, k, n0, n1, n2;
  uint32_t pad[3];
};
static_assert(sizeof(MultiParams) == 32);

constexpr int64_t kMaxRows = 4;  // the kernel's MAX_ROWS
constexpr int64_t kCols = 8;     // and COLS
// Up to this k one invocation sums a column (main_serial), as matmul's
// matvec_serial: the tiny models of tests; real models keep 32 lanes.
constexpr int64_t kSerialMaxK = 256;
constexpr int64_t kSerialGroup = 64;  // main_serial's workgroup size

}  // namespace

bool matvec_multi(const Tensor& x, std::array<const Tensor*, 3> w, bool silu_gate, std::array<Tensor*, 3> out,
                  const MatvecFusion* norm) {
  const gpu::Runtime& rt = x.device().runtime();
  const int64_t K = x.dim(-1), m = x.numel() / K;
  if (m < 1 || m > kMaxRows || K % 4 != 0) return false;
  if (norm && norm->norm && (norm->layer || norm->gelu || norm->residual)) return false;  // RMSNorm only
  const uint64_t align = rt.limits().storage_offset_alignment, limit = rt.binding_limit();
  for (const Tensor* t : {&x, w[0], w[1], w[2], static_cast<const Tensor*>(out[0]), static_cast<const Tensor*>(out[1]),
                          static_cast<const Tensor*>(out[2])})
    if (t->byte_offset() % align != 0 || t->nbytes() > limit) return false;
  const int64_t n0 = w[0]->dim(0), n1 = silu_gate ? 0 : w[1]->dim(0), n2 = silu_gate ? 0 : w[2]->dim(0);
  const int64_t cols = n0 + n1 + n2;
  MultiParams p{uint32_t(m), uint32_t(K), uint32_t(n0), uint32_t(n1), uint32_t(n2), {}};
  const bool serial = K <= kSerialMaxK;
  const int64_t per_group = serial ? kSerialGroup : kCols;
  const bool bf16 = w[0]->dtype() == DType::BF16;
  const ReducingKernel& kernel = bf16 ? (serial ? kMultiBf16Serial : kMultiBf16) : (serial ? kMultiSerial : kMulti);
  const bool normed = norm && norm->norm;
  launch(x.device(), silu_gate ? "silu_gate_matmul" : "matmul_transb_many", kernel.kernel(rt), p,
         {arg(x), arg(*w[0]), arg(*w[1]), arg(*w[2]), arg(*out[0]), arg(*out[1]), arg(*out[2]),
          normed ? arg(*norm->norm) : arg(x)},
         {uint32_t((cols + per_group - 1) / per_group), 1, 1},
         {{"MODE", silu_gate ? 1.0 : 0.0}, {"NORM", normed ? 1.0 : 0.0}, {"NORM_EPS", normed ? double(norm->eps) : 1e-5}});
  return true;
}

}  // namespace forge::webgpu
