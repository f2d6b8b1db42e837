// Llama-family training: the forward pass that keeps the activations its
// backward reads, and the explicit backward (one function per forward stage,
// as GPT-2's; see src/models/gpt2/backward.cpp for why no tape). Dense
// weights only. Shapes: N = B * T rows, H hidden, I intermediate, nh / nkv
// heads of hd.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "forge/ops/attention.h"
#include "models/llama/llama.h"

namespace forge::models {

// The trainable tensors of a Llama-family model, or their gradients, laid out
// as the model holds them.
struct LlamaParams {
  std::vector<Tensor> embed;       // row chunks of [V, H]
  std::vector<LlamaLayer> layers;  // dense w and bias of each Linear, the two norms
  Tensor norm;                     // [H]
  std::vector<Tensor> lm_head;     // row chunks of [V, H]; untied only
  // As gradients: those of the attached LoRA adapters only (each Linear's
  // lora.a and lora.b), the base frozen (LoRA training).
  bool lora_only = false;
};

// The model's weights as handles sharing its storage. ValueError for a
// quantized model (full fine-tuning needs dense weights).
LlamaParams llama_params(const LlamaModel& model);

// The attached LoRA adapters' A and B by PEFT key
// ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", then
// lora_B), module by module as llama_linears orders them.
std::vector<std::pair<std::string, Tensor*>> llama_lora_named(std::vector<LlamaLayer>& layers);

// Every tensor of p by Hugging Face name ("model.embed_tokens.weight" once
// per chunk, "model.layers.0.self_attn.q_proj.weight", ..., "lm_head.weight"),
// with biases as the config has them.
std::vector<std::pair<std::string, Tensor*>> llama_named(LlamaParams& p, const LlamaConfig& c, bool tied);

struct LlamaBlockActs {
  Tensor x_in;     // [B, T, H] block input
  Tensor h;        // [N, H] input_layernorm(x_in)
  Tensor q, k, v;  // [B, T, nh | nkv, hd], q and k after rope
  Tensor att;      // [B, T, nh, hd] attention output
  Tensor lse;      // [B, nh, T] its log-sum-exp
  Tensor x1;       // [B, T, H] residual after attention
  Tensor n;        // [N, H] post_attention_layernorm(x1)
  Tensor gu;       // [N, 2I] [gate_proj(n) | up_proj(n)], one product over joined weights
  Tensor g, u;     // [N, I] gate_proj(n), up_proj(n) otherwise (an adapter, quantized)
  Tensor m;        // [N, I] silu(gate_proj(n)) * up_proj(n), the input of down_proj
};

struct LlamaActs {
  int64_t B = 0, T = 0;
  float attn_dropout = 0;           // attention-probability dropout p
  uint64_t dropout_key = 0;         // layer l's mask: Philox key derive_key(dropout_key, l)
  Tensor ids;                        // [B, T] u32 on the CPU
  Tensor rope;                       // rope table of positions 0 .. T-1
  std::vector<LlamaBlockActs> h;     // one per layer
  Tensor x_out;                      // [B, T, H] last block's output
  Tensor lnf;                        // [N, H] final norm
};

// The forward over ids [B, T] keeping activations (the same ops in the same
// order as LlamaModel::forward); the LM head is left to llama_backward. With
// attn_dropout > 0 the attention probabilities of layer l are dropped as
// flash attention drops them with the seed derive_key(dropout_key, l); the
// backward regenerates the same masks. attn_dropout = 0 is the inference path.
LlamaActs llama_forward_train(const LlamaModel& model, const Tensor& ids, float attn_dropout = 0,
                              uint64_t dropout_key = 0);

// Layer l's attention options in training (causal, its window, its dropout).
AttentionOptions llama_train_attention(const LlamaConfig& c, const LlamaActs& a, int64_t l);

// The LM head, cross-entropy and the whole backward of one micro-batch: adds
// the gradients of grad_scale * (sum of the target positions' NLL) into
// `grads` (assigning undefined tensors; with grads->lora_only those of the
// LoRA adapters alone, for which the base may be quantized). Returns the NLL
// sum, f32 [1] on the device. With grads == nullptr only the loss is computed.
Tensor llama_backward(const LlamaModel& model, const LlamaActs& acts, const std::vector<int32_t>& targets,
                      float grad_scale, LlamaParams* grads, int64_t head_rows = 0);

}  // namespace forge::models
