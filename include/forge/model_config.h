// Hugging Face config.json for the architectures forge runs (GPT-2, Llama), MLX's
// quantization block, and the tensor layout each architecture expects in a checkpoint.
//
// Errors name the key and the file:
//   "[config] 'num_key_value_heads' = 3 does not divide 'num_attention_heads' = 4 in m/config.json"
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "forge/safetensors.h"
#include "forge/shape.h"

namespace forge {

// The block structure a checkpoint uses. Llama covers every family that is
// "Llama plus data": Qwen2 (q/k/v bias), Mistral (sliding window), TinyLlama,
// SmolLM2, Llama 3.x.
enum class Arch { Gpt2, Llama };
const char* arch_name(Arch a);  // "gpt2", "llama"

// One quantized matrix's format.
struct QuantSpec {
  int group_size = 64;  // 32, 64 or 128
  int bits = 8;         // 2, 4 or 8
};

// MLX affine quantization ("quantization" or "quantization_config"): each Linear
// weight [out, in] is stored as u32 words [out, in*bits/32] plus bf16/f16 scales and
// biases [out, in/group_size]; w = q * scale + bias.
struct QuantizationConfig {
  int group_size = 64;
  int bits = 8;
  // Per-module overrides as mlx-lm's mixed recipes write them, by full module
  // path ("model.layers.0.mlp.down_proj"): another format, or nullopt for a
  // module left unquantized (`false`).
  std::map<std::string, std::optional<QuantSpec>> overrides;
  // The format of the module at `path`; nullopt when it is not quantized.
  std::optional<QuantSpec> for_module(const std::string& path) const;
};

struct Gpt2Config {
  int64_t vocab_size = 0;   // V
  int64_t n_positions = 0;  // P, max sequence length ("n_positions", else "n_ctx")
  int64_t n_embd = 0;       // C
  int64_t n_layer = 0;
  int64_t n_head = 0;       // divides C
  int64_t n_inner = 0;      // MLP width; "n_inner" null or absent -> 4 * C
  double layer_norm_epsilon = 1e-5;
  std::string activation_function = "gelu_new";
  bool tie_word_embeddings = true;
  int64_t head_dim() const { return n_embd / n_head; }
};

// RoPE frequency scaling ("rope_scaling", or the scaling fields of "rope_parameters").
// Supported types: "default" (none), "linear", "llama3"; others are a ValueError.
struct RopeScaling {
  std::string type = "default";
  double factor = 1.0;
  // llama3 only
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;
};

struct LlamaConfig {
  int64_t vocab_size = 0;          // V
  int64_t hidden_size = 0;         // H
  int64_t intermediate_size = 0;   // I
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;  // nh
  int64_t num_key_value_heads = 0;  // nkv, divides nh; default nh
  int64_t head_dim = 0;             // hd; default H / nh
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;      // top level or rope_parameters.rope_theta
  std::optional<RopeScaling> rope_scaling;  // absent for plain RoPE
  std::string hidden_act = "silu";
  bool attention_bias = false;     // bias on q, k, v and o ("attention_bias")
  bool qkv_bias = false;           // bias on q, k, v only (Qwen2)
  bool mlp_bias = false;
  bool tie_word_embeddings = false;
  // Dropout of the attention probabilities while training ("attention_dropout").
  double attention_dropout = 0.0;
  std::string model_type = "llama";  // "llama", "qwen2", "mistral"
  // Sliding attention window of each layer in positions, 0 = full attention
  // (Mistral's "sliding_window"; Qwen2's "layer_types"/"use_sliding_window").
  std::vector<int64_t> layer_window;
  int64_t window(int64_t layer) const { return layer_window.empty() ? 0 : layer_window[size_t(layer)]; }
  bool has_bias_q() const { return attention_bias || qkv_bias; }
  // Weights of one decoder layer: q, k, v, o and the MLP's three matrices
  // (norms and biases left out), as a double so that any shape counts.
  double layer_weights() const {
    const double H = double(hidden_size), q = double(num_attention_heads) * double(head_dim),
                 kv = double(num_key_value_heads) * double(head_dim);
    return 2 * H * q + 2 * H * kv + 3 * H * double(intermediate_size);
  }
};

struct ModelConfig {
  Arch arch = Arch::Gpt2;
  std::string architecture;            // "GPT2LMHeadModel", "LlamaForCausalLM", ... (from "architectures")
  std::variant<Gpt2Config, LlamaConfig> params;
  std::optional<QuantizationConfig> quantization;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // "eos_token_id" int or list
  std::string source;                  // file it was read from

  // Throw ValueError when the config is of the other architecture.
  const Gpt2Config& gpt2() const;
  const LlamaConfig& llama() const;
  bool tie_word_embeddings() const;
  int64_t vocab_size() const;
  int64_t context_length() const;      // n_positions / max_position_embeddings
};

// Parses config.json text; `source` names the file in messages. Throws IoError for
// malformed JSON, missing keys and wrong JSON types, ValueError for inconsistent values.
ModelConfig parse_config(std::string_view json_text, const std::string& source);
// Reads DIR/config.json (or the file itself when `path` is a file).
ModelConfig load_config(const std::filesystem::path& path);

// The checks parse_config applies, for configs built in code (model presets,
// random initialisation): every size positive, heads divide the width, sizes
// small enough that parameter counts fit in 64 bits. Throw ValueError naming
// the key and `source`: "[config] 'n_head' = 0 must be positive in preset tiny".
void validate(const Gpt2Config& c, const std::string& source);
void validate(const LlamaConfig& c, const std::string& source);

// ---------------------------------------------------------------------------
// Checkpoint layout.

// How a checkpoint's tensors map onto the architecture.
struct WeightLayout {
  Arch arch = Arch::Gpt2;
  // Prefix of the transformer's tensors: "transformer." or "" for GPT-2, "model." for Llama.
  std::string prefix;
  bool tied_embeddings = true;  // no lm_head.weight: the output projection reuses the embedding
  bool quantized = false;       // at least one Linear stored as MLX u32 + scales/biases
  int64_t parameters = 0;       // model parameters (packed words unpacked, scales/biases not counted)
  std::vector<std::string> unused;  // tensors of the checkpoint the architecture does not use

  // The checkpoint's name for a tensor given without prefix: "h.0.attn.c_attn.weight",
  // "layers.0.self_attn.q_proj.weight", "lm_head.weight" (never prefixed).
  std::string name(const std::string& unprefixed) const;
};

// Guesses the architecture from tensor names alone ([transformer.]wte.weight for
// GPT-2, [model.]embed_tokens.weight for Llama); nullopt when neither is present.
std::optional<Arch> guess_arch(const std::vector<TensorInfo>& tensors);

// Checks that every tensor the config implies exists with the right shape and dtype
// family: GPT-2 Conv1D weights are [in, out] (c_attn [C, 3C]); Llama Linear weights
// are [out, in]; MLX-quantized ones are u32 [out, in*bits/32] with scales and biases
// [out, in/group_size]. Throws IoError naming the tensor and both shapes:
//   "[weights] 'h.0.attn.c_attn.weight' has shape [32, 64], expected [32, 96] in DIR".
WeightLayout check_weights(const ModelConfig& config, const std::vector<TensorInfo>& tensors,
                           const std::string& source);

}  // namespace forge
