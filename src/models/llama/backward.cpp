// The Llama-family backward pass, one explicit step per forward stage in
// reverse (see models/llama/train.h). Linear y = x W^T + b: dW = dy^T x,
// db = sum_rows(dy), dx = dy W.
#include "forge/ops.h"
#include "models/common/train_head.h"
#include "models/llama/train.h"

namespace forge::models {

namespace {

// One block's backward: dx [B, T, H] is the gradient of its output; returns
// the gradient of its input.
Tensor block_backward(const LlamaConfig& c, int64_t l, const LlamaLayer& y, const LlamaActs& a, const Tensor& dx,
                      LlamaLayer& g, bool lora_only) {
  const LlamaBlockActs& s = a.h[size_t(l)];
  const Tensor& rope_tab = a.rope;
  const int64_t B = dx.dim(0), T = dx.dim(1), H = c.hidden_size, hd = c.head_dim, N = B * T;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  const float eps = float(c.rms_norm_eps);

  // MLP: x' = x1 + down(silu(gate(n)) * up(n)), n = post_norm(x1)
  Tensor dm = linear_backward(y.down, s.m, dx.reshape({N, H}), g.down, lora_only);  // [N, I]
  Tensor dn;  // [N, H]
  if (s.gu.defined()) {
    dn = joined_linears_backward({&y.gate, &y.up}, s.n, silu_gate_packed_backward(s.gu, dm), {&g.gate, &g.up},
                                 lora_only);
  } else {
    SiluGateGrads sg = silu_gate_fused_backward(s.g, s.u, dm);
    dn = linears_backward({&y.gate, &y.up}, s.n, {sg.grad_up, sg.grad_gate}, {&g.gate, &g.up}, lora_only);
  }
  RmsNormGrads r2 = rms_norm_bwd(s.x1, y.post_norm, dn.reshape({B, T, H}), eps, &dx);
  if (!lora_only) accumulate_grad(g.post_norm, r2.dweight);
  const Tensor& dx1 = r2.dx;  // dx + the norm's input gradient [B, T, H]

  // Attention: x1 = x_in + o(attention(rope(q(h)), rope(k(h)), v(h))), h = input_norm(x_in)
  Tensor da = linear_backward(y.o, s.att.reshape({N, nh * hd}), dx1.reshape({N, H}), g.o, lora_only);  // [N, nh * hd]
  const AttentionOptions o = llama_train_attention(c, a, l);  // the forward's masks
  AttentionGrads ag = flash_attention_v2_backward(s.q, s.k, s.v, s.att, da.reshape({B, T, nh, hd}), o, nullptr, &s.lse);
  rope_backward(ag.grad_q, hd, rope_tab);
  rope_backward(ag.grad_k, hd, rope_tab);
  Tensor dh = linears_backward({&y.q, &y.k, &y.v}, s.h,
                               {ag.grad_q.reshape({N, nh * hd}), ag.grad_k.reshape({N, nkv * hd}),
                                ag.grad_v.reshape({N, nkv * hd})},
                               {&g.q, &g.k, &g.v}, lora_only);
  RmsNormGrads r1 = rms_norm_bwd(s.x_in, y.input_norm, dh.reshape({B, T, H}), eps, &dx1);
  if (!lora_only) accumulate_grad(g.input_norm, r1.dweight);
  return r1.dx;
}

}  // namespace

Tensor llama_backward(const LlamaModel& model, const LlamaActs& a, const std::vector<int32_t>& targets,
                      float grad_scale, LlamaParams* grads, int64_t head_rows) {
  const LlamaConfig& c = model.config();
  const int64_t B = a.B, T = a.T, H = c.hidden_size;
  const Embedding& out = model.tied() ? model.embed() : model.lm_head();
  // A quantized output table (LoRA over a quantized base) as dense row
  // chunks for this micro-batch.
  const std::vector<Tensor> dequantized =
      out.is_quantized() ? split_rows_for_binding(out.quantized.dense_weight(), model.device()) : std::vector<Tensor>{};
  const std::vector<Tensor>& table = out.is_quantized() ? dequantized : out.chunks;
  if (!grads) return lm_head_nll(table, c.vocab_size, a.lnf, targets, 0.0f, nullptr, nullptr, head_rows, "[llama_train]");

  LlamaParams& g = *grads;
  const bool lora_only = g.lora_only;
  if (g.layers.empty()) g.layers.resize(size_t(c.num_hidden_layers));
  Tensor dlnf;
  std::vector<Tensor>* dtable = lora_only ? nullptr : model.tied() ? &g.embed : &g.lm_head;
  Tensor loss = lm_head_nll(table, c.vocab_size, a.lnf, targets, grad_scale, dtable, &dlnf, head_rows, "[llama_train]");
  RmsNormGrads rf = rms_norm_bwd(a.x_out, model.final_norm(), dlnf.reshape({B, T, H}), float(c.rms_norm_eps));
  if (!lora_only) accumulate_grad(g.norm, rf.dweight);
  Tensor dx = rf.dx;  // [B, T, H]
  for (int64_t l = c.num_hidden_layers - 1; l >= 0; --l)
    dx = block_backward(c, l, model.layers()[size_t(l)], a, dx, g.layers[size_t(l)], lora_only);
  if (lora_only) return loss;  // the embedding is frozen

  // Embedding: x0 = embed[ids].
  const Embedding& e = model.embed();
  g.embed.resize(e.chunks.size());  // untied: no gradient yet (the trainer may have sized the list)
  for (size_t i = 0; i < e.chunks.size(); ++i)
    if (!g.embed[i].defined()) g.embed[i] = Tensor::zeros(e.chunks[i].shape(), DType::F32, model.device());
  scatter_add_rows_chunked(g.embed, e.chunk_rows, a.ids, dx);  // dx [B, T, H]
  return loss;
}

}  // namespace forge::models
