// The GPT-2 backward pass, written out by hand as one explicit backward
// function per forward stage (the layout of llm.c), not recorded on a tape.
//
// Why explicit functions: GPT-2's graph is fixed and small (embeddings, L
// identical blocks, ln_f, a tied LM head), so a tape would buy generality the
// model does not use while costing a dynamic graph, type-erased closures and
// reference-counted intermediates whose lifetimes are hard to see. Written
// out, every saved activation is a named field with its shape
// (Gpt2BlockActs), the memory a step needs is visible in one struct, the
// order of gradient accumulation is fixed (so results are deterministic and
// a resumed run reproduces an uninterrupted one bit for bit), and each line
// maps onto one backward op that has its own parity and finite-difference
// tests. The cost is that a change to the forward must be mirrored here; the
// golden test against the reference gradients catches a mismatch.
//
// The LM head and cross-entropy run over row blocks of the positions
// (models/common/train_head.h).
#include <algorithm>

#include "forge/gpt2_train.h"
#include "models/common/train_head.h"
#include "models/common/weights.h"
#include "models/gpt2/train_util.h"

namespace forge {

namespace {

using models::lm_head_nll;
using models::scatter_add_rows_chunked;

Tensor maybe_dropout(const Tensor& x, float p, uint64_t seed) { return p > 0 ? dropout(x, p, seed) : x; }

void acc(Tensor& slot, const Tensor& g) { models::accumulate_grad(slot, g); }

// The output table as row chunks: the model's own, or a quantized wte
// dequantized (a LoRA step over a quantized base; the table is frozen).
std::vector<Tensor> head_table(const Gpt2& model) {
  const Gpt2Weights& w = model.weights();
  if (!w.wte_q.quant) return w.wte;
  return split_rows_for_binding(w.wte_q.dense_weight(), model.device());
}

// The LM head and cross-entropy over the rows of lnf [N, C] that have a
// target (the tied wte as the output table). Returns the NLL sum [1]; with
// `grads`, also adds grad_scale times its gradient into grads->g.wte (unless
// only LoRA adapters train) and returns dlnf [N, C] through *dlnf.
Tensor head(const Gpt2& model, const Tensor& lnf, const std::vector<int32_t>& targets, float grad_scale,
            Gpt2Grads* grads, Tensor* dlnf, int64_t head_rows) {
  std::vector<Tensor>* dtable = grads && !grads->lora_only ? &grads->g.wte : nullptr;
  return lm_head_nll(head_table(model), model.config().vocab_size, lnf, targets, grad_scale, dtable, dlnf, head_rows,
                     "[gpt2_train]");
}

// One block's backward: dx [B, T, C] is the gradient of its output; returns
// the gradient of its input. Linears through linear_backward (Conv1D's
// [in, out] gradients; with lora_only their adapters' alone, and no layer
// norm gradients).
Tensor block_backward(const Gpt2Config& c, const Gpt2Block& b, const Gpt2BlockActs& s, const Gpt2Dropout& p,
                      const Tensor& dx, Gpt2Block& g, bool lora_only) {
  const int64_t B = dx.dim(0), T = dx.dim(1), C = c.n_embd, nh = c.n_head, hd = C / nh, N = B * T;
  const float eps = float(c.layer_norm_epsilon);
  auto ln_acc = [&](Tensor& slot, const Tensor& grad) {
    if (!lora_only) acc(slot, grad);
  };

  // MLP: x2 = x1 + drop(mlp_proj(gelu(fc(ln2))))
  Tensor dmlp = maybe_dropout(dx.reshape({N, C}), p.resid, s.seed_resid2);                               // [N, C]
  Tensor dfc = gelu_bwd(s.fc, models::linear_backward(b.mlp_proj, s.fc_gelu, dmlp, g.mlp_proj, lora_only));  // [N, I]
  Tensor dln2 = models::linear_backward(b.fc, s.ln2, dfc, g.fc, lora_only);                                // [N, C]
  LayerNormGrads l2 = layernorm_bwd(s.x1, b.ln_2_w, dln2.reshape({B, T, C}), eps, &dx);
  ln_acc(g.ln_2_w, l2.dgamma);
  ln_acc(g.ln_2_b, l2.dbeta);
  const Tensor& dx1 = l2.dx;  // dx + the norm's input gradient [B, T, C]

  // Attention: x1 = x_in + drop(attn_proj(attention(q, k, v))), flash
  // attention with its dropout on the probabilities.
  Tensor dproj = maybe_dropout(dx1.reshape({N, C}), p.resid, s.seed_resid1);                 // [N, C]
  Tensor dy = models::linear_backward(b.attn_proj, s.y, dproj, g.attn_proj, lora_only);       // [N, C]
  const Shape hs{B, T, nh, hd};
  Tensor dqkv = flash_attention_v2_packed_backward(s.qkv, nh, nh, s.y.reshape(hs), dy.reshape(hs),
                                                   gpt2::train_attention(p, s), nullptr, &s.lse)
                    .reshape({N, 3 * C});  // q's, k's and v's gradients side by side
  Tensor dln1 = models::linear_backward(b.c_attn, s.ln1, dqkv, g.c_attn, lora_only);  // [N, C]
  LayerNormGrads l1 = layernorm_bwd(s.x_in, b.ln_1_w, dln1.reshape({B, T, C}), eps, &dx1);
  ln_acc(g.ln_1_w, l1.dgamma);
  ln_acc(g.ln_1_b, l1.dbeta);
  return l1.dx;
}

}  // namespace

Tensor gpt2_backward(const Gpt2& model, const Gpt2Activations& a, const std::vector<int32_t>& targets,
                     float grad_scale, Gpt2Grads& grads, int64_t head_rows) {
  const Gpt2Config& c = model.config();
  const Gpt2Weights& w = model.weights();
  const Device& dev = model.device();
  const int64_t B = a.B, T = a.T, C = c.n_embd, N = B * T;
  Gpt2Weights& g = grads.g;
  if (g.h.empty()) g.h.resize(size_t(c.n_layer));

  const bool lora_only = grads.lora_only;
  Tensor dlnf;
  Tensor loss = head(model, a.lnf, targets, grad_scale, &grads, &dlnf, head_rows);
  LayerNormGrads lf = layernorm_bwd(a.x_out, w.ln_f_w, dlnf.reshape({B, T, C}), float(c.layer_norm_epsilon));
  Tensor dx = lf.dx;  // [B, T, C]
  for (int64_t l = c.n_layer - 1; l >= 0; --l)
    dx = block_backward(c, w.h[size_t(l)], a.h[size_t(l)], a.dropout, dx, g.h[size_t(l)], lora_only);
  if (lora_only) return loss;  // layer norms and embeddings frozen
  acc(g.ln_f_w, lf.dgamma);
  acc(g.ln_f_b, lf.dbeta);

  // Embeddings: x0 = drop(wte[ids] + wpe[t]).
  Tensor dx0 = maybe_dropout(dx.reshape({N, C}), a.dropout.embd, a.seed_embd).reshape({B, T, C});
  scatter_add_rows_chunked(g.wte, w.wte_chunk_rows, a.ids, dx0);
  if (!g.wpe.defined()) g.wpe = Tensor::zeros(w.wpe.shape(), DType::F32, dev);
  std::vector<uint32_t> pos(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) pos[size_t(i)] = uint32_t(i % T);
  scatter_add_rows(g.wpe, Tensor::from_vector(pos, {B, T}), dx0);
  g.wte_chunk_rows = w.wte_chunk_rows;
  return loss;
}

float gpt2_eval_loss(const Gpt2& model, const Tensor& ids, const std::vector<int32_t>& targets) {
  Gpt2Activations a = gpt2_forward_train(model, ids, Gpt2Dropout{}, 0);
  int64_t n = 0;
  for (int32_t t : targets) n += t >= 0;
  Tensor loss = head(model, a.lnf, targets, 0.0f, nullptr, nullptr, 0);
  return float(double(loss.to_vector<float>()[0]) / double(std::max<int64_t>(n, 1)));
}

}  // namespace forge
