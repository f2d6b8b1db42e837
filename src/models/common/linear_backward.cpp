// The backward of a Linear (models/common/weights.h), shared by every
// family's explicit backward pass.
#include "forge/ops.h"
#include "models/common/train_head.h"
#include "models/common/weights.h"

namespace forge::models {

Tensor linear_backward(const Linear& lin, const Tensor& x, const Tensor& dy, Linear& g, bool lora_only) {
  const bool conv1d = lin.conv1d && !lin.quant;
  if (!lora_only) {
    if (lin.quant) throw ValueError("[linear] a quantized weight has no gradient (train a LoRA adapter over it)");
    // dW = dy^T x as [out, in]; x^T dy as Conv1D's [in, out].
    accumulate_grad(g.w, conv1d ? matmul_tn(x, dy) : matmul_tn(dy, x));
    if (lin.bias.defined()) accumulate_grad(g.bias, sum_rows(dy));
  }
  Tensor dx = conv1d ? matmul_nt(dy, lin.w) : matmul_nn(dy, lin.dense_weight());  // [N, in]
  if (!lin.lora.defined()) return dx;
  const Tensor u = matmul_nt(x, lin.lora.a);                           // [N, r], recomputed
  const Tensor du = scale(matmul_nn(dy, lin.lora.b), lin.lora.scale);  // [N, r]
  if (lora_only) {
    accumulate_grad(g.lora.b, scale(matmul_tn(dy, u), lin.lora.scale));  // [out, r]
    accumulate_grad(g.lora.a, matmul_tn(du, x));                         // [r, in]
  }
  return add(dx, matmul_nn(du, lin.lora.a));
}

}  // namespace forge::models
