// matmul: shape resolution (transposes, batch broadcast, b_rows) and dispatch;
// bf16_to_f32, the widening behind a bf16 B; the decode-step fusions (a
// norm of A's rows, a residual added to the product).
#include "cpu/kernels.h"
#include "forge/ops/llama.h"
#include "forge/ops/nn.h"
#include "forge/ops/train.h"
#include "gpu/runtime.h"
#include "ops/check.h"
#include "webgpu/kernels.h"

namespace forge {

Tensor row_norm(const Tensor& x, const RowNorm& n) {
  check::row_norm("row_norm", x, n);
  if (!n.layer) return rms_norm(x, *n.weight, n.eps);
  if (n.bias) return layernorm(x, *n.weight, *n.bias, n.eps);
  return layernorm(x, *n.weight, Tensor::zeros({x.dim(-1)}, DType::F32, x.device()), n.eps);
}

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& o) {
  const char* op = "matmul";
  const bool fused = o.norm || o.residual || o.gelu;
  if (o.accumulate && !o.out) throw ValueError("[matmul] accumulate needs an out tensor to add the product into");
  if (o.out && fused) throw ValueError("[matmul] an out tensor is not taken with a row norm, gelu or residual");
  if (fused) {
    if (o.transpose_a || a.rank() != 2)
      throw ShapeError("[matmul] a row norm, gelu or residual takes a rank-2 a, not transposed: a " + a.describe());
    if (o.norm) check::row_norm(op, a, *o.norm);
  }
  check::same_device(op, {&a, &b});
  if (o.bias) check::same_device(op, {&a, o.bias});
  check::dtype(op, "a", a, DType::F32);
  // B may be a dense weight kept in bf16: its values are widened exactly and
  // the products summed in f32, as for an f32 B holding the same values.
  if (b.dtype() != DType::F32 && b.dtype() != DType::BF16)
    throw DTypeError(std::string("[matmul] b must be f32 or bf16, got ") + dtype_name(b.dtype()) + ": " +
                     check::operands({{"a", &a}, {"b", &b}}));
  check::rank(op, "a", a, 2, 3);
  check::rank(op, "b", b, 2, 3);
  auto shapes = [&] { return check::operands({{"a", &a}, {"b", &b}}); };

  MatmulPlan p;
  p.trans_a = o.transpose_a;
  p.trans_b = o.transpose_b;
  p.alpha = o.alpha;
  p.a_triangle = o.a_triangle;
  p.c_triangle = o.c_triangle;
  p.accumulate = o.accumulate;
  int64_t a_rows = a.dim(-2), a_cols = a.dim(-1);
  int64_t b_stored_rows = b.dim(-2), b_cols = b.dim(-1);
  int64_t b_rows = b_stored_rows;
  if (o.b_rows >= 0) {
    if (o.b_rows > b_stored_rows)
      throw ShapeError("[matmul] b_rows " + std::to_string(o.b_rows) + " exceeds the rows of " + shapes());
    b_rows = o.b_rows;
  }
  p.m = p.trans_a ? a_cols : a_rows;
  p.k = p.trans_a ? a_rows : a_cols;
  int64_t bk = p.trans_b ? b_cols : b_rows;
  p.n = p.trans_b ? b_rows : b_cols;
  if (p.k != bk)
    throw ShapeError("[matmul] inner dims differ (" + std::to_string(p.k) + " vs " + std::to_string(bk) +
                     "): " + shapes());
  p.lda = a_cols;
  p.ldb = b_cols;
  int64_t a_batch = a.rank() == 3 ? a.dim(0) : 0, b_batch = b.rank() == 3 ? b.dim(0) : 0;
  if (a_batch && b_batch && a_batch != b_batch)
    throw ShapeError("[matmul] batch sizes differ: " + shapes());
  p.batch = std::max<int64_t>(1, std::max(a_batch, b_batch));
  p.a_batch_stride = a_batch ? a_rows * a_cols : 0;
  p.b_batch_stride = b_batch ? b_stored_rows * b_cols : 0;
  if (o.bias) {
    check::dtype(op, "bias", *o.bias, DType::F32);
    if (o.bias->rank() != 1 || o.bias->dim(0) != p.n)
      throw ShapeError("[matmul] bias must be [" + std::to_string(p.n) + "], got " + o.bias->describe());
  }
  Shape out_shape = (a_batch || b_batch) ? Shape{p.batch, p.m, p.n} : Shape{p.m, p.n};
  if (o.residual) {
    check::same_device(op, {&a, o.residual});
    check::dtype(op, "residual", *o.residual, DType::F32);
    if (o.residual->shape() != out_shape)
      throw ShapeError("[matmul] residual " + o.residual->describe() + " must be the product's " +
                       shape_str(out_shape) + ": " + shapes());
  }
  if (o.norm || o.residual || o.gelu) {
    const webgpu::MatvecFusion f = webgpu::matvec_fusion(o.norm, o.residual, o.gelu);
    if (a.device().is_webgpu() &&
        (webgpu::matvec_fusable(p, f, a.device().runtime().cpu_driver()) || webgpu::tile_fusable(p, f))) {
      Tensor out = Tensor::empty(out_shape, DType::F32, a.device());
      webgpu::matmul(a, b, o.bias, p, out, &f);
      return out;
    }
    // The plain ops (the CPU's reference, and shapes the kernels do not take).
    MatmulOptions plain = o;
    plain.norm = nullptr;
    plain.residual = nullptr;
    plain.gelu = false;
    Tensor y = matmul(o.norm ? row_norm(a, *o.norm) : a, b, plain);
    if (o.gelu) y = gelu(y);
    return o.residual ? add(*o.residual, y) : y;
  }
  if (o.out) check::output(op, *o.out, out_shape, {&a, &b, o.bias});
  Tensor out = o.out ? *o.out : Tensor::empty(out_shape, DType::F32, a.device());
  run_matmul_plan(a, b, o.bias, p, out);
  return out;
}

void run_matmul_plan(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out) {
  if (plan.accumulate && (a.device().is_cpu() || !webgpu::tiles_accumulate(plan))) {
    MatmulPlan fresh = plan;
    fresh.accumulate = false;
    Tensor product = Tensor::empty(out.shape(), DType::F32, out.device());
    run_matmul_plan(a, b, bias, fresh, product);
    gradient_accumulate(out, product);
    return;
  }
  if (a.device().is_cpu()) cpu::matmul(a, b, bias, plan, out);
  else webgpu::matmul(a, b, bias, plan, out);
}

Tensor bf16_to_f32(const Tensor& x) {
  check::dtype("bf16_to_f32", "x", x, DType::BF16);
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  if (out.numel() == 0) return out;
  if (x.device().is_cpu()) cpu::widen_bf16(x, out);
  else webgpu::widen_bf16(x, out);
  return out;
}

}  // namespace forge
