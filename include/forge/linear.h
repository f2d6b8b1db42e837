// The linear layer every model family builds its blocks from: dense or MLX
// affine-quantized weights, an optional bias and an optional LoRA delta.
// Public because GPT-2's weights (forge/gpt2.h) hold it; the loading side
// (named tensors of a checkpoint) lives with the model code.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "forge/model_config.h"
#include "forge/ops/core.h"
#include "forge/tensor.h"

namespace forge::models {

struct TensorSource;
struct DeviceTally;

// A LoRA delta on a Linear (PEFT's layout): y += scale * (x @ A^T) @ B^T.
struct LoraWeights {
  Tensor a;          // [r, in]  (lora_A)
  Tensor b;          // [out, r] (lora_B)
  float scale = 0;   // lora_alpha / r, or lora_alpha / sqrt(r) with rsLoRA
  bool defined() const { return a.defined(); }
};

// y = x @ W^T (+ b) (+ the LoRA delta when one is attached): W [out, in]
// dense f32 or bf16 (a model loaded for bf16 weights on the device: the
// products read the 16-bit values and compute in f32), or MLX affine-quantized (u32 words [out, in * bits / 32],
// scales and biases [out, in / group_size] in the checkpoint's float dtype).
//
// GPT-2's Conv1D keeps its dense weight as the checkpoint stores it, [in, out]
// (conv1d = true, y = x @ w): its trainer, optimizer state, gradients and
// checkpoints are all in that layout (Hugging Face's), so a transpose at load
// would need one back at every save, resume and gradient read, and the plain
// product it takes is the one GPT-2 ran before. Quantized weights are always
// MLX's [out, in] rows (groups run along the input), whatever the family, and
// so are bf16 ones (inference weights: nothing trains them, and the decode
// kernels read rows of W).
struct Linear {
  int64_t in = 0, out = 0;
  Tensor w;                         // dense [out, in] (f32 or bf16), or f32 [in, out] when conv1d
  bool conv1d = false;              // w stored [in, out]
  Tensor q, scales, biases;         // quantized
  std::optional<QuantSpec> quant;   // set when quantized
  Tensor bias;                      // [out] or undefined
  LoraWeights lora;                 // attached adapter, or undefined

  // x [.., in] -> [.., out].
  Tensor operator()(const Tensor& x) const;
  // gelu((*this)(norm(x))) (the norm and the gelu each where asked) for x
  // [N, in]: fused into one dispatch where the weight is dense without an
  // adapter (a decode step on WebGPU, MatmulOptions::norm and gelu); the
  // separate ops otherwise.
  Tensor operator()(const Tensor& x, const RowNorm* norm, bool gelu = false) const;
  // r + (*this)(x) for x [N, in], r [N, out]: the product that feeds a
  // residual stream, fused into one dispatch where the weight is dense
  // without an adapter (a decode step on WebGPU); the plain sum otherwise.
  Tensor residual(const Tensor& x, const Tensor& r) const;
  // A packed q/k/v projection's step (GPT-2's c_attn): qkv = (*this)(norm(x))
  // for x [B * T, in], split by qkv_append into q [B, T, nh, hd] (returned)
  // and k and v appended to k_cache and v_cache [B, cap, nh, hd] at `at`.
  // One dispatch for a decode step where the weight is a dense f32 Conv1D
  // without an adapter (qkv_append's product form); the separate ops
  // otherwise.
  Tensor qkv_append(const Tensor& x, const RowNorm* norm, Tensor& k_cache, Tensor& v_cache, int64_t at) const;
  // W as dense f32 in the stored orientation ([out, in], or [in, out] when
  // conv1d; widened from bf16 or dequantized; the delta excluded).
  Tensor dense_weight() const;
  // The LoRA delta scale * B @ A in W's orientation ([out, in], or its
  // transpose when conv1d); the adapter must be attached.
  Tensor lora_delta() const;

  // "<base>.weight" (+ "<base>.scales"/".biases" when quantized, "<base>.bias"
  // when with_bias) from `src`; `quant` is the module's format from the config.
  // With conv1d a dense weight is read as [in, out] (a quantized one is always
  // [out, in] rows). `dense` is how a dense weight is held: f32, or bf16
  // (a bf16 file's values as they are, others rounded to nearest even; a
  // conv1d weight transposed to [out, in]). Biases stay f32.
  static Linear load(const TensorSource& src, const std::string& base, int64_t out, int64_t in, bool with_bias,
                     const std::optional<QuantizationConfig>& quant, const Device& device, DeviceTally& tally,
                     bool conv1d = false, DType dense = DType::F32);
};

}  // namespace forge::models
