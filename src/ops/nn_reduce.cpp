// sum_rows, sumsq, sumsq_tensor: validation and dispatch.
#include "cpu/nn_kernels.h"
#include "ops/check.h"
#include "webgpu/nn_kernels.h"

namespace forge {

Tensor sum_rows(const Tensor& x) {
  const char* op = "sum_rows";
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  check::rank(op, "x", x, 1, 8);
  int64_t cols = x.dim(-1);
  int64_t rows = cols ? x.numel() / cols : 0;
  if (rows == 0) return Tensor::zeros({cols}, DType::F32, x.device());
  Tensor out = Tensor::empty({cols}, DType::F32, x.device());
  if (x.device().is_cpu()) cpu::sum_rows(x, rows, cols, out);
  else webgpu::sum_rows(x, rows, cols, out);
  return out;
}

Tensor sumsq_tensor(const Tensor& x) {
  const char* op = "sumsq";
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  if (x.numel() == 0) return Tensor::zeros({1}, DType::F32, x.device());
  if (x.device().is_cpu()) {
    float s = float(cpu::sumsq(x));
    return Tensor::from_vector(std::vector<float>{s}, {1});
  }
  Tensor out = Tensor::empty({1}, DType::F32, x.device());
  webgpu::sumsq(x, out);
  return out;
}

float sumsq(const Tensor& x) {
  if (x.defined() && x.device().is_cpu()) {
    check::dtype("sumsq", "x", x, DType::F32);
    return float(cpu::sumsq(x));
  }
  return sumsq_tensor(x).to_vector<float>()[0];
}

}  // namespace forge
