// The causal language model interface every family implements (GPT-2, and the
// Llama family: Llama, SmolLM2, TinyLlama, Qwen2, Mistral), its KV cache, and
// loading a Hugging Face model folder by its config.json.
//
//   auto model = forge::load_model("models/smollm2", forge::Device::webgpu());
//   forge::Tensor logits = model->forward(ids);               // ids [B, T] -> [B, T, V]
//   float loss = forge::causal_lm_loss(logits, ids);          // mean over B * (T - 1)
//   forge::KvCache cache = model->new_cache(1);
//   forge::Tensor last = model->forward_cached(ids, cache);   // [B, V], cache.len += T
//
// Generation over any model is forge/generate.h. Errors are forge::Error
// subclasses naming the model family ("[llama] ...") or the op that failed.
//
// Threads: a loaded model is read-only to its const members, so several
// threads may run forward, forward_cached, prefill_row, decode_rows and
// generate on one model at once, each with its own KvCache (one cache is
// one thread's at a time). Calls that change the weights (load_adapter,
// attach_new_adapter, merge_adapter, a trainer's step) must not overlap any
// other use of the model.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <cstddef>
#include <vector>

#include "forge/model_config.h"
#include "forge/tensor.h"

namespace forge {
struct SafetensorsFiles;  // forge/safetensors.h
}

namespace forge {

// Keys and values of every layer, preallocated on the model's device. The
// layout of each tensor is the family's (GPT-2: [B, heads, capacity, hd];
// Llama: [B, capacity, kv_heads, hd]); code outside the model only reads
// len, capacity and batch.
struct KvCache {
  std::vector<Tensor> k, v;  // one per layer
  int64_t len = 0;           // positions seen (the next token's position)
  int64_t capacity = 0;      // positions each layer holds
  int64_t batch = 0;
  // A ring of the last `capacity` positions (sliding-window attention):
  // position p lives in slot p % capacity, so memory stays bounded however
  // long the sequence grows.
  bool ring = false;
};

// What a loaded model is, for listings and benchmarks.
struct ModelInfo {
  std::string family;        // "gpt2", "llama", "qwen2", "mistral"
  std::string architecture;  // "GPT2LMHeadModel", "LlamaForCausalLM", ...
  int64_t vocab_size = 0;
  int64_t context_length = 0;  // positions the model was trained for
  std::string context_key;     // its config.json key, for messages: "n_positions", "max_position_embeddings"
  int64_t hidden_size = 0;
  int64_t layers = 0;
  int64_t parameters = 0;
  std::string weights;       // "f32", "bf16 -> f32", "mlx q4 (group 64)", ...
  uint64_t device_bytes = 0;  // bytes the weights take on the device
  std::optional<uint32_t> bos;
  std::vector<uint32_t> eos;  // generation stops at any of these
};

class CausalLM {
 public:
  virtual ~CausalLM() = default;

  const ModelInfo& info() const { return info_; }
  const Device& device() const { return device_; }
  int64_t vocab_size() const { return info_.vocab_size; }
  int64_t context_length() const { return info_.context_length; }

  // ids [B, T] (u32 or i32; or [T]) -> logits [B, T, V] (or [T, V]),
  // positions 0 .. T-1. When `hidden` is given it receives L + 1 tensors
  // [B, T, C]: the embedding output, the output of blocks 0 .. L-2, and the
  // final norm of the last block's output (as transformers' hidden_states).
  // ValueError when T exceeds the context length.
  virtual Tensor forward(const Tensor& ids, std::vector<Tensor>* hidden = nullptr) const = 0;

  // An empty cache for `batch` sequences holding `capacity` positions (0:
  // the whole context; a sliding-window model may hold less and wrap).
  virtual KvCache new_cache(int64_t batch, int64_t capacity = 0) const = 0;

  // Appends ids [B, T] (u32 or i32, CPU or the model's device) at positions
  // cache.len .. cache.len + T - 1 and returns the logits of the last one,
  // [B, V]. ValueError naming the limit when they do not fit.
  virtual Tensor forward_cached(const Tensor& ids, KvCache& cache) const = 0;

  // Continuous batching: each row of a cache from new_row_cache(rows) holds
  // one sequence at its own position (cache.len is not used). A family
  // without it throws ValueError from both calls; has_row_decode says which.
  virtual bool has_row_decode() const { return false; }
  // A cache for prefill_row / decode_rows: `rows` sequences of `capacity`
  // positions (0: the whole context). The family's new_cache unless its row
  // layout differs.
  virtual KvCache new_row_cache(int64_t rows, int64_t capacity = 0) const { return new_cache(rows, capacity); }
  // Replaces row `row` with the prompt ids [1, T] at positions 0 .. T-1 ->
  // the last position's logits [1, V]. Not for a ring (sliding-window) cache.
  virtual Tensor prefill_row(const Tensor& ids, KvCache& cache, int64_t row) const;
  // One token per row 0 .. n-1: ids [n, 1] at positions pos[i] (the row's
  // length so far; n <= cache.batch) -> logits [n, V]. A row's result equals
  // forward_cached on that sequence alone.
  virtual Tensor decode_rows(const Tensor& ids, KvCache& cache, const std::vector<int64_t>& pos) const;

 protected:
  explicit CausalLM(Device device) : device_(std::move(device)) {}
  ModelInfo info_;
  Device device_;
};

// Loads DIR (config.json + safetensors, single or sharded) as the family its
// config names. Dense weights (f32, bf16, f16 in the file) are held on the
// device as `weights` says: f32, or bf16 (the Linear layers' weights in 16
// bits, half the memory and decode traffic; a bf16 file's values as they
// are, f32 and f16 ones rounded to nearest even; embeddings, norms and biases
// stay f32); products are computed in f32 either way. MLX affine-quantized
// weights stay quantized on the device whatever `weights` says. ValueError
// naming the field and value for a configuration forge does not implement,
// or for `weights` other than f32 and bf16.
std::unique_ptr<CausalLM> load_model(const std::filesystem::path& dir, const Device& device,
                                     DType weights = DType::F32);
// The same with the weights' files found and opened through `files`
// (forge/safetensors.h): the browser build reads them from the page's Blobs,
// one tensor at a time, so no whole file is held in memory.
std::unique_ptr<CausalLM> load_model(const std::filesystem::path& dir, const Device& device,
                                     const SafetensorsFiles& files, DType weights = DType::F32);

// A model of `config`'s family with random weights (normal(0, 0.02), norms 1,
// biases 0), for benchmarks: stored as `dense_dtype` (f32, bf16 or f16) as a
// checkpoint would hold them, and quantized per config.quantization when set;
// held on the device as `weights` says (load_model).
std::unique_ptr<CausalLM> random_model(const ModelConfig& config, uint64_t seed, const Device& device,
                                       DType dense_dtype = DType::F32, DType weights = DType::F32);

// The model.safetensors of a Llama-family model of `config` with random_model's
// weights, as a checkpoint holds them: what `forge init --config` writes so a
// run can train a new model from scratch. ValueError for GPT-2 (its scheme is
// gpt2_random_tensors) or a dense dtype other than f32, bf16 or f16.
std::vector<std::byte> random_checkpoint_bytes(const ModelConfig& config, uint64_t seed,
                                               DType dense_dtype = DType::F32);

// The configurations of released models by short name, for benchmarks:
// "smollm2-135m", "smollm2-360m", "qwen2.5-0.5b", "llama3.2-1b", "tinyllama-1.1b".
// ValueError listing the names for another.
ModelConfig model_preset(const std::string& name);

// Mean next-token cross-entropy of logits [B, T, V] against ids [B, T]
// (labels are ids shifted by one: B * (T - 1) positions), read back.
float causal_lm_loss(const Tensor& logits, const Tensor& ids);

// ids [T] or [B, T] -> [B, T] (a view); ShapeError naming `who` otherwise.
Tensor ids_as_batch(const Tensor& ids, const char* who);

}  // namespace forge
