// The Llama-family forward pass for training: LlamaModel::layer's ops in the
// same order (so losses match inference), keeping what the backward reads;
// attention through flash_attention_v2_lse so the backward reuses the
// log-sum-exp. Also the parameter lists the trainer works over.
#include "forge/ops.h"
#include "models/common/keys.h"
#include "models/llama/train.h"

namespace forge::models {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

Tensor ids_u32_cpu(const Tensor& ids_in) {
  Tensor ids = ids_as_batch(ids_in, "llama_train");
  Tensor h = ids.device().is_cpu() ? ids : ids.to(Device::cpu());
  if (h.dtype() == DType::U32) return h;
  if (h.dtype() != DType::I32) throw DTypeError("[llama_train] ids must be u32 or i32, got " + ids.describe());
  std::vector<uint32_t> v(size_t(h.numel()));
  const int32_t* p = h.data<int32_t>();
  for (size_t i = 0; i < v.size(); ++i) {
    if (p[i] < 0) throw ValueError("[llama_train] negative id " + S(p[i]) + " at " + S(int64_t(i)));
    v[i] = uint32_t(p[i]);
  }
  return Tensor::from_vector(v, h.shape());
}

}  // namespace

LlamaParams llama_params(const LlamaModel& model) {
  if (model.embed().is_quantized() || model.layers().front().q.quant)
    throw ValueError("[llama_train] full fine-tuning needs dense weights; this model is quantized (" +
                     model.info().weights + ")");
  // f32 master weights: a bf16 load is for inference and LoRA over it.
  if (model.layers().front().q.w.dtype() == DType::BF16)
    throw ValueError("[llama_train] full fine-tuning needs f32 weights; this model holds bf16 ones on the device "
                     "(load it with f32 weights to train it, or attach a LoRA adapter)");
  LlamaParams p;
  p.embed = model.embed().chunks;
  p.layers = model.layers();
  p.norm = model.final_norm();
  if (!model.tied()) p.lm_head = model.lm_head().chunks;
  return p;
}

std::vector<std::pair<std::string, Tensor*>> llama_named(LlamaParams& p, const LlamaConfig& c, bool tied) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (Tensor& chunk : p.embed) out.push_back({"model.embed_tokens.weight", &chunk});
  for (size_t l = 0; l < p.layers.size(); ++l) {
    const std::string pre = "model.layers." + std::to_string(l) + ".";
    LlamaLayer& y = p.layers[l];
    out.push_back({pre + "input_layernorm.weight", &y.input_norm});
    auto linear = [&](const std::string& name, Linear& lin, bool bias) {
      out.push_back({pre + name + ".weight", &lin.w});
      if (bias) out.push_back({pre + name + ".bias", &lin.bias});
    };
    linear("self_attn.q_proj", y.q, c.has_bias_q());
    linear("self_attn.k_proj", y.k, c.has_bias_q());
    linear("self_attn.v_proj", y.v, c.has_bias_q());
    linear("self_attn.o_proj", y.o, c.attention_bias);
    out.push_back({pre + "post_attention_layernorm.weight", &y.post_norm});
    linear("mlp.gate_proj", y.gate, c.mlp_bias);
    linear("mlp.up_proj", y.up, c.mlp_bias);
    linear("mlp.down_proj", y.down, c.mlp_bias);
  }
  out.push_back({"model.norm.weight", &p.norm});
  if (!tied)
    for (Tensor& chunk : p.lm_head) out.push_back({"lm_head.weight", &chunk});
  return out;
}

std::vector<std::pair<std::string, Tensor*>> llama_lora_named(std::vector<LlamaLayer>& layers) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (auto& [name, lin] : llama_linears(layers)) {
    if (!lin->lora.defined()) continue;
    out.push_back({"base_model.model." + name + ".lora_A.weight", &lin->lora.a});
    out.push_back({"base_model.model." + name + ".lora_B.weight", &lin->lora.b});
  }
  return out;
}

AttentionOptions llama_train_attention(const LlamaConfig& c, const LlamaActs& a, int64_t l) {
  AttentionOptions o;
  o.causal = true;
  o.window = c.window(l);
  if (a.attn_dropout > 0) {
    o.dropout_p = a.attn_dropout;
    o.dropout_seed = derive_key(a.dropout_key, uint64_t(l));
  }
  return o;
}

LlamaActs llama_forward_train(const LlamaModel& model, const Tensor& ids_in, float attn_dropout,
                              uint64_t dropout_key) {
  const LlamaConfig& c = model.config();
  if (!(attn_dropout >= 0 && attn_dropout < 1))
    throw ValueError("[llama_train] attention dropout " + std::to_string(attn_dropout) + " must lie in [0, 1)");
  LlamaActs a;
  a.attn_dropout = attn_dropout;
  a.dropout_key = dropout_key;
  a.ids = ids_u32_cpu(ids_in);
  a.B = a.ids.dim(0);
  a.T = a.ids.dim(1);
  const int64_t B = a.B, T = a.T, H = c.hidden_size, hd = c.head_dim, N = B * T;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  if (T < 1 || T > c.max_position_embeddings)
    throw ValueError("[llama_train] sequence length " + S(T) + " must lie in 1.." + S(c.max_position_embeddings) +
                     " (max_position_embeddings)");
  const float eps = float(c.rms_norm_eps);
  a.rope = rope_table(model.inv_freq(), 0, T, model.device());
  Tensor x = model.embed().lookup(a.ids);  // [B, T, H]
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LlamaLayer& y = model.layers()[size_t(l)];
    LlamaBlockActs s;
    s.x_in = x;
    s.h = rms_norm(x, y.input_norm, eps).reshape({N, H});
    const std::vector<Tensor> qkv = apply_all({&y.q, &y.k, &y.v}, s.h);  // one product when joined
    s.q = qkv[0].reshape({B, T, nh, hd});
    s.k = qkv[1].reshape({B, T, nkv, hd});
    s.v = qkv[2].reshape({B, T, nkv, hd});
    rope(s.q, hd, a.rope);
    rope(s.k, hd, a.rope);
    AttentionForward f = flash_attention_v2_lse(s.q, s.k, s.v, llama_train_attention(c, a, l));
    s.att = f.out;
    s.lse = f.lse;
    RmsNormResidual r =
        rms_norm_residual(y.o(s.att.reshape({N, nh * hd})).reshape({B, T, H}), x, y.post_norm, eps);
    s.x1 = r.sum;
    s.n = r.out.reshape({N, H});
    s.gu = joined_product({&y.gate, &y.up}, s.n);
    if (s.gu.defined()) {
      s.m = silu_gate_packed(s.gu);
    } else {
      const std::vector<Tensor> gu = apply_all({&y.gate, &y.up}, s.n);
      s.g = gu[0];
      s.u = gu[1];
      s.m = silu_gate_fused(s.g, s.u);
    }
    x = add(s.x1, y.down(s.m).reshape({B, T, H}));
    a.h.push_back(std::move(s));
  }
  a.x_out = x;
  a.lnf = rms_norm(x, model.final_norm(), eps).reshape({N, H});
  return a;
}

}  // namespace forge::models
