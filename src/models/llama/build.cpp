// LlamaModel construction: every tensor from a TensorSource onto the device.
#include "models/llama/llama.h"

namespace forge::models {

LlamaModel::LlamaModel(const ModelConfig& mc, const TensorSource& src, const std::string& prefix,
                       const Device& device, DType dense)
    : CausalLM(device), c_(mc.llama()), inv_freq_(llama_inv_freq(c_)) {
  const int64_t H = c_.hidden_size, I = c_.intermediate_size, V = c_.vocab_size;
  const int64_t q = c_.num_attention_heads * c_.head_dim, kv = c_.num_key_value_heads * c_.head_dim;
  const auto& quant = mc.quantization;
  DeviceTally tally;
  embed_ = Embedding::load(src, prefix + "embed_tokens", V, H, quant, device, tally);
  for (int64_t l = 0; l < c_.num_hidden_layers; ++l) {
    const std::string p = prefix + "layers." + std::to_string(l) + ".";
    LlamaLayer y;
    y.input_norm = load_dense(src, p + "input_layernorm.weight", device, tally);
    y.post_norm = load_dense(src, p + "post_attention_layernorm.weight", device, tally);
    const std::string a = p + "self_attn.", m = p + "mlp.";
    y.q = Linear::load(src, a + "q_proj", q, H, c_.has_bias_q(), quant, device, tally, false, dense);
    y.k = Linear::load(src, a + "k_proj", kv, H, c_.has_bias_q(), quant, device, tally, false, dense);
    y.v = Linear::load(src, a + "v_proj", kv, H, c_.has_bias_q(), quant, device, tally, false, dense);
    y.o = Linear::load(src, a + "o_proj", H, q, c_.attention_bias, quant, device, tally, false, dense);
    y.gate = Linear::load(src, m + "gate_proj", I, H, c_.mlp_bias, quant, device, tally, false, dense);
    y.up = Linear::load(src, m + "up_proj", I, H, c_.mlp_bias, quant, device, tally, false, dense);
    y.down = Linear::load(src, m + "down_proj", H, I, c_.mlp_bias, quant, device, tally, false, dense);
    // One product each for q/k/v and gate/up over many rows (prefill, training).
    join_weights({&y.q, &y.k, &y.v});
    join_weights({&y.gate, &y.up});
    layers_.push_back(std::move(y));
  }
  norm_ = load_dense(src, prefix + "norm.weight", device, tally);
  tied_ = c_.tie_word_embeddings || !src.contains("lm_head.weight");
  if (!tied_) lm_head_ = Embedding::load(src, "lm_head", V, H, quant, device, tally);

  info_.family = c_.model_type;
  info_.architecture = mc.architecture;
  info_.vocab_size = V;
  info_.context_length = c_.max_position_embeddings;
  info_.context_key = "max_position_embeddings";
  info_.hidden_size = H;
  info_.layers = c_.num_hidden_layers;
  info_.device_bytes = tally.bytes;
  int64_t params = V * H * (tied_ ? 1 : 2) + H;
  params += c_.num_hidden_layers * (2 * H + q * H + 2 * kv * H + H * q + 3 * I * H);
  if (c_.has_bias_q()) params += c_.num_hidden_layers * (q + 2 * kv);
  if (c_.attention_bias) params += c_.num_hidden_layers * H;
  if (c_.mlp_bias) params += c_.num_hidden_layers * (2 * I + H);
  info_.parameters = params;
  if (mc.bos_token_id) info_.bos = uint32_t(*mc.bos_token_id);
  for (int64_t e : mc.eos_token_ids) info_.eos.push_back(uint32_t(e));
  if (quant) {
    const std::string norms = dense_dtype_summary(src, {prefix + "norm.weight"});
    info_.weights = "mlx q" + std::to_string(quant->bits) + " (group " + std::to_string(quant->group_size) + ")";
    if (!quant->overrides.empty()) info_.weights += " with per-layer overrides";
    info_.weights += ", " + norms + " norms";
  } else {
    const std::string file = dense_dtype_summary(src, {prefix + "norm.weight"});
    if (dense == DType::BF16) info_.weights = file == "bf16" ? "bf16" : file + " -> bf16";
    else info_.weights = file == "f32" ? "f32" : file + " (computed in f32)";
  }
}

}  // namespace forge::models

namespace forge::models {

std::vector<std::pair<std::string, Linear*>> llama_linears(std::vector<LlamaLayer>& layers) {
  std::vector<std::pair<std::string, Linear*>> out;
  for (size_t l = 0; l < layers.size(); ++l) {
    const std::string a = "model.layers." + std::to_string(l) + ".self_attn.", m = "model.layers." + std::to_string(l) + ".mlp.";
    LlamaLayer& y = layers[l];
    for (auto [name, lin] : {std::pair{"q_proj", &y.q}, {"k_proj", &y.k}, {"v_proj", &y.v}, {"o_proj", &y.o}})
      out.push_back({a + name, lin});
    for (auto [name, lin] : {std::pair{"gate_proj", &y.gate}, {"up_proj", &y.up}, {"down_proj", &y.down}})
      out.push_back({m + name, lin});
  }
  return out;
}

}  // namespace forge::models
