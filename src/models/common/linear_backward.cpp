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
    accumulate_product(g.w, [&](Tensor* into, bool accumulate) {
      MatmulOptions o;
      o.transpose_a = true;
      o.out = into;
      o.accumulate = accumulate;
      return conv1d ? matmul(x, dy, o) : matmul(dy, x, o);
    });
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

Tensor linears_backward(const std::vector<const Linear*>& ls, const Tensor& x, const std::vector<Tensor>& dys,
                        const std::vector<Linear*>& gs, bool lora_only) {
  if (ls.empty() || dys.size() != ls.size() || gs.size() != ls.size())
    throw ValueError("[linear] linears_backward: " + std::to_string(ls.size()) + " layers, " +
                     std::to_string(dys.size()) + " output gradients, " + std::to_string(gs.size()) + " gradient slots");
  const std::optional<JoinedLinears> joined = lora_only ? std::nullopt : joined_linears(ls);
  if (!joined || joined->w.dtype() != DType::F32) {
    Tensor dx = linear_backward(*ls[0], x, dys[0], *gs[0], lora_only);
    for (size_t i = 1; i < ls.size(); ++i) dx = add(dx, linear_backward(*ls[i], x, dys[i], *gs[i], lora_only));
    return dx;
  }
  return joined_linears_backward(ls, x, concat_columns(dys), gs, false);
}

Tensor joined_linears_backward(const std::vector<const Linear*>& ls, const Tensor& x, const Tensor& dy,
                               const std::vector<Linear*>& gs, bool lora_only) {
  const std::optional<JoinedLinears> j = joined_linears(ls);
  if (!j || gs.size() != ls.size())
    throw ValueError("[linear] joined_linears_backward: the Linears are not joined in one storage");
  const Tensor& joined = j->w;
  // dy = [dy_0 | dy_1 | ..] [N, sum out_i]: dW_joined = dy^T x and
  // db_joined = the sum of dy's rows, whose blocks are each Linear's
  // gradients (views at 256-byte multiples, as the weights and biases are),
  // and dx = dy W_joined.
  if (!lora_only) {
    if (joined.dtype() != DType::F32) throw ValueError("[linear] a 16-bit weight has no gradient (train in f32)");
    // Into the slots' targets at once where they lie back to back, as the
    // weights do (the optimizer's pages keep the weights' layout).
    std::vector<Tensor> targets;
    for (const Linear* g : gs) {
      const Tensor* t = g->w.defined() ? nullptr : GradTargets::find(g->w);
      if (!t) break;
      targets.push_back(*t);
    }
    Tensor joined_target = targets.size() == gs.size() ? Tensor::joined_rows(targets) : Tensor();
    MatmulOptions o;
    o.transpose_a = true;
    if (joined_target.defined()) o.out = &joined_target;
    const Tensor dw = matmul(dy, x, o);
    const Tensor db = j->bias.defined() ? sum_rows(dy) : Tensor();
    int64_t at = 0;
    for (size_t i = 0; i < ls.size(); ++i) {
      const int64_t rows = ls[i]->w.dim(0);
      accumulate_grad(gs[i]->w, dw.slice_rows(at, at + rows));
      if (db.defined()) accumulate_grad(gs[i]->bias, db.slice_rows(at, at + rows));
      at += rows;
    }
  }
  return matmul_nn(dy, joined.dtype() == DType::F32 ? joined : bf16_to_f32(joined));
}

}  // namespace forge::models
