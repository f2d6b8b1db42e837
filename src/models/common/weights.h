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

#include "forge/linear.h"
#include "forge/model_config.h"
#include "forge/ops/core.h"
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
// A matrix [rows, cols] (any float dtype in the file) as bf16 on `device`:
// a bf16 file's values as they are, others rounded to nearest even; with
// transpose stored [cols, rows].
Tensor load_bf16(const TensorSource& src, const std::string& name, bool transpose, const Device& device,
                 DeviceTally& tally);
// A tensor uploaded with its file dtype unchanged (u32 words, 16-bit scales).
Tensor load_raw(const TensorSource& src, const std::string& name, const Device& device, DeviceTally& tally);

// Host values [rows, cols] -> [cols, rows] (GPT-2's Conv1D [in, out] to and
// from MLX's quantized [out, in] rows).
std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols);

// A quantized Linear made dense f32 on its device: [out, in], or with
// conv1d GPT-2's Conv1D layout [in, out] (a quantized Linear is MLX's
// [out, in] rows in every family); a dense one is left as it is. Its products
// then give the dequantized weight's results (a LoRA delta merged into it is
// not rounded away).
void make_dense(Linear& lin, bool conv1d = false);

// The gradients of a Linear from its input x [N, in] and output gradient
// dy [N, out] into g (those of W, in W's stored orientation, and b; or with
// lora_only those of its LoRA A and B alone, the base frozen and possibly
// quantized); returns dx [N, in]. With y = x W^T + s (x A^T) B^T and
// u = x A^T: dB = s dy^T u, du = s dy B, dA = du^T x, dx = dy W + du A.
Tensor linear_backward(const Linear& lin, const Tensor& x, const Tensor& dy, Linear& g, bool lora_only);
// The same for Linears that read one x (dys[i] the gradient of ls[i]'s
// output, gs[i] its gradients); returns the sum of their dx. Linears joined
// by join_weights (joined_linears, f32) take two products over the
// concatenated dys instead of two each.
Tensor linears_backward(const std::vector<const Linear*>& ls, const Tensor& x, const std::vector<Tensor>& dys,
                        const std::vector<Linear*>& gs, bool lora_only);
// The backward of joined_product from its output gradient dy [N, sum out_i]
// (joined_linears): each weight's gradient, a row block of dy^T x, and each
// bias's, a block of dy's column sums, unless lora_only (the base frozen);
// returns dx = dy W_joined.
Tensor joined_linears_backward(const std::vector<const Linear*>& ls, const Tensor& x, const Tensor& dy,
                               const std::vector<Linear*>& gs, bool lora_only);

// Puts the dense weights of Linears that read the same input (a layer's q, k,
// v; gate, up) back to back in one new storage, each Linear keeping a view of
// its rows, so that apply_all and silu_gate_of take one product for many rows
// (Tensor::joined_rows); their biases likewise where every one has a bias.
// Left as they are unless all are dense [out_i, in] of one dtype, each a
// whole number of 256-byte blocks (every view stays bindable on its own) and
// together within one storage binding.
void join_weights(const std::vector<Linear*>& ls);

// What one product over Linears joined by join_weights reads: their weights
// as one [sum out_i, in] and their biases as one [sum out_i] (undefined when
// none has a bias). Empty unless all are dense without an adapter, their
// weights joined, and their biases all joined or all absent.
struct JoinedLinears {
  Tensor w, bias;
};
std::optional<JoinedLinears> joined_linears(const std::vector<const Linear*>& ls);

// Dense [out, in], without a bias or an adapter: the Linears that the fused
// decode kernels and the joined products take.
bool is_plain(const Linear& l);

// Linears that read the same x [.., in], as {l(x) for l in ls}: one dispatch
// for a decode step where all are dense without a bias or adapter
// (matmul_transb_many). With `norm` they read row_norm(x) instead, the norm
// applied inside that dispatch; the other formats take the norm as an op of
// its own, then one product where the Linears are joined with their biases
// (joined_product, x [N, in]), else each Linear.
std::vector<Tensor> apply_all(const std::vector<const Linear*>& ls, const Tensor& x, const RowNorm* norm = nullptr);
// x [N, in] through Linears joined by join_weights (joined_linears), as one
// product [N, sum out_i] = [l_0(x) | l_1(x) | ..] left joined (for an op
// that reads the blocks in place: silu_gate_packed), biases included;
// undefined when they are not joined.
Tensor joined_product(const std::vector<const Linear*>& ls, const Tensor& x);
// silu(gate(x)) * up(x), the Llama MLP's input to down_proj: one dispatch for
// a decode step where both are dense without a bias or adapter
// (silu_gate_matmul); `norm` as for apply_all, joined with biases likewise.
Tensor silu_gate_of(const Linear& gate, const Linear& up, const Tensor& x, const RowNorm* norm = nullptr);

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
  // x [N, C] -> logits [N, V] = x @ table^T (the tied LM head); with `norm`
  // of row_norm(x) (fused into the product for few rows of a dense table).
  Tensor project(const Tensor& x, const RowNorm* norm = nullptr) const;

  static Embedding load(const TensorSource& src, const std::string& base, int64_t vocab, int64_t width,
                        const std::optional<QuantizationConfig>& quant, const Device& device, DeviceTally& tally);
};

// "f32", "bf16", "f16", or "mixed" for the dense tensors of `src` named in `names`.
std::string dense_dtype_summary(const TensorSource& src, const std::vector<std::string>& names);

}  // namespace forge::models
