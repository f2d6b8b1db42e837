// Host side of matmul: the tiled kernels in two tile sizes, over vec4 loads
// (shaders/matmul_vec4.wgsl) when the operands are aligned and over scalars
// (shaders/matmul.wgsl) when not, and matrix-vector kernels for few rows
// (shaders/matvec_vec4.wgsl against an aligned B [n, k], shaders/matvec.wgsl
// otherwise). B may be bf16 (a dense weight kept in 16 bits): the vec4
// matrix-vector kernels widen it as they read it; other shapes take a
// widened copy.
#include <cstdlib>

#include "forge_shaders.h"
#include "webgpu/kernels.h"
#include "webgpu/launch.h"
#include "webgpu/composed_kernel.h"

namespace forge::webgpu {

namespace {

const ComposedKernel kMatmul{"matmul", {shaders::matmul_params, shaders::matmul}};
const ComposedKernel kMatmulVec4{"matmul_vec4", {shaders::matmul_params, shaders::matmul_vec4}};
// The matrix-vector kernels come in two sizes of MAX_ROWS (rows a workgroup
// computes, prepended as a constant): 4 for one sequence's decode step, whose
// registers and workgroup memory stay as small as they were tuned, and 8 for
// a batch of sequences. main_serial (one invocation a column) serves small k.
const ComposedKernel kMatvec{"matvec", {shaders::matmul_params, "const MAX_ROWS: u32 = 4u;", shaders::matvec}};
const ComposedKernel kMatvec8{"matvec", {shaders::matmul_params, "const MAX_ROWS: u32 = 8u;", shaders::matvec}};
const ComposedKernel kMatvecSerial{"matvec_serial", {shaders::matmul_params, "const MAX_ROWS: u32 = 4u;", shaders::matvec},
                                   "main_serial"};

// matvec_vec4.wgsl for one weight dtype (its weights snippet): f32, or bf16
// widened as it is read, which halves the bytes a decode step streams.
struct Vec4Kernels {
  ComposedKernel rows4, rows8, serial;
  explicit Vec4Kernels(std::string_view weights)
      : rows4{"matvec_vec4",
              {shaders::matmul_params, weights, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::matvec_vec4}},
        rows8{"matvec_vec4",
              {shaders::matmul_params, weights, "const MAX_ROWS: u32 = 8u;", shaders::norm_prologue, shaders::matvec_vec4}},
        serial{"matvec_vec4_serial",
               {shaders::matmul_params, weights, "const MAX_ROWS: u32 = 4u;", shaders::norm_prologue, shaders::matvec_vec4},
               "main_serial"} {}
};
const Vec4Kernels kVec4F32{shaders::weights_f32};
const Vec4Kernels kVec4Bf16{shaders::weights_bf16};

struct MatmulParams {
  uint32_t m, n, k, lda, ldb, a_batch_stride, b_batch_stride;
  float alpha;
  uint32_t has_bias;
  uint32_t ldc;       // row stride of C
  uint32_t c_offset;  // elements of C before the first output
  uint32_t a_offset;  // elements of A before its first element
};
static_assert(sizeof(MatmulParams) == 48);

constexpr int64_t kMatvecRows = 4;  // rows of one sequence's decode step (kMatvec*'s MAX_ROWS)
// Up to this many rows (a decode step of a batch of sequences) take the
// matrix-vector kernels, 8 rows a workgroup past 4: with n / 8 x m / 8
// workgroups they keep the GPU busy where 64x64 tiles would give n / 64.
// Only for real models' k (> kSerialMaxK): on a short k the 32 lanes of a
// column have little to sum, and 5-32 rows (a tiny model's training batch)
// cost far more as n / 8 x m / 8 reductions than as tiles (SwiftShader: a
// vocabulary-wide head over 32 rows and k = 64 took 6 s, tiled 0.1 s).
constexpr int64_t kBatchedMatvecRows = 32;
// Up to this k a column's products are summed by one invocation
// (matvec.wgsl's main_serial): the tiny models of tests and short attention
// rows; real models' layers (k >= 512) keep the 32-lane kernels.
constexpr int64_t kSerialMaxK = 256;
constexpr int64_t kSerialGroup = 64;    // main_serial's workgroup size
// Rows main_serial takes (MAX_ROWS a workgroup row): a tiny model's training
// batch or re-prefill, whose 64x64 tiles and their barriers cost a CPU driver
// milliseconds each (SwiftShader: 16 ms for 32 x 32 x 96).
constexpr int64_t kSerialMaxRows = 64;
constexpr int64_t kLargeTileGroups = 256;  // enough 128x128 tiles to fill a large GPU

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// matmul_vec4.wgsl reads each operand as vec4s along its contiguous dim:
// that dim, the strides and the offsets must be multiples of 4 (whole vec4s).
bool vec4_aligned(const MatmulPlan& p) {
  auto four = [](int64_t v) { return v % 4 == 0; };
  const int64_t a_contig = p.trans_a ? p.m : p.k;
  const int64_t b_contig = p.trans_b ? p.k : p.n;
  return four(a_contig) && four(b_contig) && four(p.lda) && four(p.ldb) && four(p.a_batch_stride) &&
         four(p.b_batch_stride) && four(p.a_offset);
}

// The vec4 matrix-vector kernels (matvec_vec4.wgsl) take this plan.
bool vec4_matvec(const MatmulPlan& plan) {
  const bool serial = plan.m <= kSerialMaxRows && plan.k <= kSerialMaxK;
  const bool matvec = plan.m <= kMatvecRows || (plan.m <= kBatchedMatvecRows && plan.k > kSerialMaxK);
  return !plan.trans_a && plan.trans_b && vec4_aligned(plan) && (serial || matvec);
}

}  // namespace

bool matvec_fusable(const MatmulPlan& plan, const MatvecFusion& f) {
  if (!vec4_matvec(plan) || plan.m == 0 || plan.n == 0 || plan.k == 0) return false;
  if (f.norm && (plan.batch != 1 || plan.k % 4 != 0)) return false;
  // The residual is read at C's own index.
  return !f.residual || plan.batch == 1;
}

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out,
            const MatvecFusion* fuse) {
  if (fuse && !matvec_fusable(plan, *fuse))
    throw DeviceError("[matmul] internal: a norm or residual fusion on a plan the matrix-vector kernels do not take");
  if (plan.m == 0 || plan.n == 0) return;
  const int64_t ldc = plan.ldc ? plan.ldc : plan.n;
  if (plan.k == 0 && ldc == plan.n && plan.c_offset == 0) {
    // The kernel would write alpha * 0 (+ bias); the empty sum is clearer spelled out.
    out.device().runtime().clear(out.buffer(), out.byte_offset(), (out.nbytes() + 3) / 4 * 4);
  }
  const auto& limits = out.device().runtime().limits();
  if (plan.batch > limits.max_workgroups_per_dim)
    throw DeviceError("[matmul] batch " + std::to_string(plan.batch) + " exceeds the device's grid limit");
  MatmulParams p{uint32_t(plan.m), uint32_t(plan.n), uint32_t(plan.k), uint32_t(plan.lda), uint32_t(plan.ldb),
                 uint32_t(plan.a_batch_stride), uint32_t(plan.b_batch_stride), plan.alpha,
                 bias ? 1u : 0u, uint32_t(ldc), uint32_t(plan.c_offset), uint32_t(plan.a_offset)};
  const bool bf16 = b.dtype() == DType::BF16;
  const bool vec4_rows = !plan.trans_a && plan.trans_b && vec4_aligned(plan);
  const bool serial = plan.m <= kSerialMaxRows && !plan.trans_a && plan.k <= kSerialMaxK;
  const bool matvec = !plan.trans_a && (plan.m <= kMatvecRows || (plan.m <= kBatchedMatvecRows && plan.k > kSerialMaxK));
  if (bf16 && !(vec4_rows && (serial || matvec))) {
    // Only the vec4 matrix-vector kernels read bf16: elsewhere (many rows,
    // where the tiled kernel reuses each weight across rows, or unaligned
    // shapes) one widened copy of B takes the f32 kernels.
    Tensor wide = Tensor::empty(b.shape(), DType::F32, b.device());
    widen_bf16(b, wide);
    matmul(a, wide, bias, plan, out);
    return;
  }
  const Vec4Kernels& vec4k = bf16 ? kVec4Bf16 : kVec4F32;
  std::initializer_list<gpu::Arg> args{arg(a), arg(b), bias ? arg(*bias) : arg(a), arg(out)};
  // The vec4 kernels also bind the residual and the norm's weight (A where unused).
  const Tensor* residual = fuse ? fuse->residual : nullptr;
  const Tensor* norm = fuse ? fuse->norm : nullptr;
  std::initializer_list<gpu::Arg> vec4_args{arg(a),   arg(b), bias ? arg(*bias) : arg(a), arg(out),
                                            residual ? arg(*residual) : arg(a), norm ? arg(*norm) : arg(a)};
  std::initializer_list<gpu::Constant> fusion{{"NORM", norm ? 1.0 : 0.0},
                                              {"NORM_EPS", fuse ? double(fuse->eps) : 1e-5},
                                              {"RESIDUAL", residual ? 1.0 : 0.0}};
  if (serial) {
    const std::array<uint32_t, 3> groups{uint32_t(ceil_div(plan.n, kSerialGroup)), uint32_t(ceil_div(plan.m, kMatvecRows)),
                                         uint32_t(plan.batch)};
    if (vec4_rows) launch(out.device(), "matmul", vec4k.serial.kernel(), p, vec4_args, groups, fusion);
    else launch(out.device(), "matmul", kMatvecSerial.kernel(), p, args, groups, {{"TRANS_B", plan.trans_b ? 1.0 : 0.0}});
    return;
  }
  if (matvec && vec4_rows) {
    // Few rows against B [n, k] (every Linear layer's decode step): each
    // column's row of B read in vec4s by 32 lanes.
    const int64_t cols = 8;  // matvec_vec4.wgsl's COLS
    const int64_t rows = plan.m <= kMatvecRows ? kMatvecRows : 8;
    launch(out.device(), "matmul", (rows == 4 ? vec4k.rows4 : vec4k.rows8).kernel(), p, vec4_args,
           {uint32_t(ceil_div(plan.n, cols)), uint32_t(ceil_div(plan.m, rows)), uint32_t(plan.batch)}, fusion);
    return;
  }
  if (matvec) {
    // Few rows (decode): read B once, coalesced, splitting k across lanes.
    const int64_t cols = 8;  // matvec.wgsl's COLS
    const int64_t rows = plan.m <= kMatvecRows ? kMatvecRows : 8;
    launch(out.device(), "matmul", (rows == 4 ? kMatvec : kMatvec8).kernel(), p, args,
           {uint32_t(ceil_div(plan.n, cols)), uint32_t(ceil_div(plan.m, rows)), uint32_t(plan.batch)},
           {{"TRANS_B", plan.trans_b ? 1.0 : 0.0}});
    return;
  }
  // 128x128 tiles when there are enough of them to occupy the device, else 64x64.
  int64_t t = ceil_div(plan.m, 128) * ceil_div(plan.n, 128) * plan.batch >= kLargeTileGroups ? 8 : 4;
  int64_t tile = 16 * t;
  std::array<uint32_t, 3> groups{uint32_t(ceil_div(plan.n, tile)), uint32_t(ceil_div(plan.m, tile)),
                                 uint32_t(plan.batch)};
  const bool vec4 = vec4_aligned(plan) && !std::getenv("FORGE_MATMUL_SCALAR");
  launch(out.device(), "matmul", vec4 ? kMatmulVec4.kernel() : kMatmul.kernel(), p, args, groups,
         {{"TRANS_A", plan.trans_a ? 1.0 : 0.0}, {"TRANS_B", plan.trans_b ? 1.0 : 0.0}, {"T", double(t)}});
}

}  // namespace forge::webgpu
