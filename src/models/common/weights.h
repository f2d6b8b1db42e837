// Reading a model's tensors onto the device, shared by every family: a
// source of named host tensors (a checkpoint on disk, or one built in memory
// for a random model), and the layers whose weights come in more than one
// form: Linear (dense or MLX-quantized) and Embedding (a row-chunked dense
// table or a quantized one).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "forge/model_config.h"
#include "forge/safetensors.h"
#include "forge/tensor.h"

namespace forge::models {

// Named tensors of a checkpoint, by full name.
struct TensorSource {
  std::function<bool(const std::string&)> contains;
  std::function<TensorView(const std::string&)> get;
  std::string origin;  // for messages

  static TensorSource of(const Checkpoint& ckpt);
  static TensorSource of(const SafetensorsFile& file);
};

// Counts what a model puts on its device, for ModelInfo.
struct DeviceTally {
  uint64_t bytes = 0;
  void add(const Tensor& t) {
    if (t.defined()) bytes += t.nbytes();
  }
};

// A dense tensor (f32, f16 or bf16 in the file) as f32 on `device`.
Tensor load_dense(const TensorSource& src, const std::string& name, const Device& device, DeviceTally& tally);
// A tensor uploaded with its file dtype unchanged (u32 words, 16-bit scales).
Tensor load_raw(const TensorSource& src, const std::string& name, const Device& device, DeviceTally& tally);

// A LoRA delta on a Linear (PEFT's layout): y += scale * (x @ A^T) @ B^T.
struct LoraWeights {
  Tensor a;          // [r, in]  (lora_A)
  Tensor b;          // [out, r] (lora_B)
  float scale = 0;   // lora_alpha / r, or lora_alpha / sqrt(r) with rsLoRA
  bool defined() const { return a.defined(); }
};

// y = x @ W^T (+ b) (+ the LoRA delta when one is attached): W [out, in]
// dense f32, or MLX affine-quantized (u32 words [out, in * bits / 32],
// scales and biases [out, in / group_size] in the checkpoint's float dtype).
struct Linear {
  int64_t in = 0, out = 0;
  Tensor w;                         // dense [out, in]
  Tensor q, scales, biases;         // quantized
  std::optional<QuantSpec> quant;   // set when quantized
  Tensor bias;                      // [out] or undefined
  LoraWeights lora;                 // attached adapter, or undefined

  // x [.., in] -> [.., out].
  Tensor operator()(const Tensor& x) const;
  // W as dense f32 [out, in] (dequantized when quantized; the delta excluded).
  Tensor dense_weight() const;

  // "<base>.weight" (+ "<base>.scales"/".biases" when quantized, "<base>.bias"
  // when with_bias) from `src`; `quant` is the module's format from the config.
  static Linear load(const TensorSource& src, const std::string& base, int64_t out, int64_t in, bool with_bias,
                     const std::optional<QuantizationConfig>& quant, const Device& device, DeviceTally& tally);
};

// Linears that read the same x [.., in], as {l(x) for l in ls}: one dispatch
// for a decode step where all are dense without a bias or adapter
// (matmul_transb_many).
std::vector<Tensor> apply_all(const std::vector<const Linear*>& ls, const Tensor& x);
// silu(gate(x)) * up(x), the Llama MLP's input to down_proj: one dispatch for
// a decode step where both are dense without a bias or adapter
// (silu_gate_matmul).
Tensor silu_gate_of(const Linear& gate, const Linear& up, const Tensor& x);

// The token table [V, C]: dense (row chunks, each within one storage binding)
// or quantized (rows dequantized as they are gathered). Also the output layer
// of a model with tied embeddings.
struct Embedding {
  int64_t vocab = 0, width = 0;
  std::vector<Tensor> chunks;  // dense: row chunks of [V, C]
  int64_t chunk_rows = 0;
  Linear quantized;            // quantized: the table as a Linear [V, C]

  bool is_quantized() const { return quantized.quant.has_value(); }
  // ids [B, T] -> [B, T, C].
  Tensor lookup(const Tensor& ids) const;
  // x [N, C] -> logits [N, V] = x @ table^T (the tied LM head).
  Tensor project(const Tensor& x) const;

  static Embedding load(const TensorSource& src, const std::string& base, int64_t vocab, int64_t width,
                        const std::optional<QuantizationConfig>& quant, const Device& device, DeviceTally& tally);
};

// "f32", "bf16", "f16", or "mixed" for the dense tensors of `src` named in `names`.
std::string dense_dtype_summary(const TensorSource& src, const std::vector<std::string>& names);

}  // namespace forge::models
