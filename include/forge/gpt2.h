// GPT-2 inference: the model built from a Hugging Face checkpoint (config.json
// + safetensors, names with or without the "transformer." prefix, Conv1D
// weights stored [in, out], the LM head tied to wte), its forward pass over a
// batch, a preallocated KV cache, token-by-token generation with on-device
// sampling, and random initialisation in GPT-2's scheme for checkpoints made
// without a download.
//
//   forge::Gpt2 model = forge::Gpt2::load("models/gpt2", forge::Device::webgpu());
//   forge::Tensor logits = model.forward(ids);          // ids [B, T] -> [B, T, V]
//   float loss = forge::Gpt2::loss(logits, ids);        // mean over B * (T - 1)
//
// Errors are forge::Error subclasses whose message starts with "[gpt2]" (or the
// op that failed): missing files, ids outside the vocabulary, a sequence longer
// than the context length n_positions.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forge/generate.h"
#include "forge/linear.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/model_config.h"
#include "forge/ops/gather.h"
#include "forge/ops/sample.h"
#include "forge/tensor.h"

namespace forge {

// One transformer block. C = n_embd, I = n_inner (4C by default). The four
// projections are Linears (forge/linear.h): dense in Conv1D's [in, out] layout
// as Hugging Face stores them, or MLX-quantized ([out, in] rows).
struct Gpt2Block {
  Tensor ln_1_w, ln_1_b;          // [C]
  models::Linear c_attn;          // C -> 3C (q, k, v side by side), bias [3C]
  models::Linear attn_proj;       // attn.c_proj: C -> C, bias [C]
  Tensor ln_2_w, ln_2_b;          // [C]
  models::Linear fc;              // mlp.c_fc: C -> I, bias [I]
  models::Linear mlp_proj;        // mlp.c_proj: I -> C, bias [C]
};

struct Gpt2Weights {
  // The token table [V, C] as row chunks, each [wte_chunk_rows, C] but the
  // last ([1..wte_chunk_rows, C]), every one within the device's storage
  // binding limit; the LM head runs over them (tied embeddings).
  std::vector<Tensor> wte;
  int64_t wte_chunk_rows = 0;
  // A quantized token table instead (MLX [V, C] rows; wte then empty): rows
  // dequantized on gather, the tied head reading the packed words.
  models::Linear wte_q;
  Tensor wpe;                     // [P, C]
  std::vector<Gpt2Block> h;       // n_layer blocks
  Tensor ln_f_w, ln_f_b;          // [C]
};

// Keys and values of every layer for positions [0, len): k and v per layer
// [B, capacity, n_head, head_dim] (token-major, as flash_attention_v2 reads
// them; the row cache of continuous batching too).
using Gpt2Cache = KvCache;

// A host-side tensor by its Hugging Face name (Conv1D layout), for writing
// checkpoints.
struct Gpt2HostTensor {
  std::string name;               // "h.0.attn.c_attn.weight", ... (no prefix)
  Shape shape;
  std::vector<float> values;
};

// GPT-2 as a CausalLM (forge/model.h); load_model() returns one for a GPT-2
// folder.
class Gpt2 : public CausalLM {
 public:
  // DIR/config.json and DIR's safetensors (single or sharded), checked with
  // check_weights; f32, f16 and bf16 weights are converted to f32, or with
  // `weights` bf16 the blocks' projections are held in bf16 (load_model).
  static Gpt2 load(const std::filesystem::path& dir, const Device& device, DType weights = DType::F32);
  // The same with the weights' files found and opened through `files` (load_model's).
  static Gpt2 load(const std::filesystem::path& dir, const Device& device, const SafetensorsFiles& files,
                   DType weights = DType::F32);
  // A model with GPT-2's random initialisation (see gpt2_random_tensors).
  static Gpt2 random(const Gpt2Config& config, uint64_t seed, const Device& device);
  // From host tensors named as gpt2_random_tensors names them.
  static Gpt2 from_host(const Gpt2Config& config, const std::vector<Gpt2HostTensor>& tensors, const Device& device);

  const Gpt2Config& config() const { return config_; }
  const Gpt2Weights& weights() const { return w_; }
  // For the LoRA functions (forge/lora.h): the weights the adapters attach
  // to, and the attached adapter's settings (nullopt: none).
  Gpt2Weights& mutable_weights() { return w_; }
  std::optional<LoraConfig>& adapter() { return adapter_; }
  const std::optional<LoraConfig>& adapter() const { return adapter_; }

  // ids [B, T] (u32 or i32; or [T]) -> logits [B, T, V] (or [T, V]). When
  // `hidden` is given it receives L + 1 tensors [B, T, C]: the embedding
  // output, the output of blocks 0 .. L-2, and ln_f of the last block's
  // output (as transformers' hidden_states). ValueError when T > P.
  Tensor forward(const Tensor& ids, std::vector<Tensor>* hidden = nullptr) const override;

  // An empty cache for `batch` sequences on the model's device.
  KvCache new_cache(int64_t batch, int64_t capacity = 0) const override;
  // Appends ids [B, T] (u32 or i32, CPU or the model's device) at positions
  // cache.len .. cache.len + T - 1 and returns the logits of the last one,
  // [B, V]. ValueError naming the context length when they do not fit.
  Tensor forward_cached(const Tensor& ids, KvCache& cache) const override;

  // Continuous batching (forward_rows.cpp): a row cache is new_cache's,
  // [rows, capacity, n_head, hd] per layer.
  bool has_row_decode() const override { return true; }
  Tensor prefill_row(const Tensor& ids, KvCache& cache, int64_t row) const override;
  Tensor decode_rows(const Tensor& ids, KvCache& cache, const std::vector<int64_t>& pos) const override;

  // ids [B, T] -> wte[ids] + wpe[pos + t], [B, T, C] (dense or quantized wte).
  Tensor embed(const Tensor& ids, int64_t pos) const;

  // Mean next-token cross-entropy of logits [B, T, V] against ids [B, T]
  // (labels are ids shifted by one: B * (T - 1) positions), read back.
  static float loss(const Tensor& logits, const Tensor& ids);

 private:
  Gpt2(Gpt2Config config, Device device);
  // x [B, T, C] through block l; cache may be null (no cache, positions 0..T-1).
  // A cache is token-major, [B, capacity, n_head, hd] per layer. With
  // `last_only` and a cache, every position's k and v go into the cache but
  // only the last position of each sequence goes on: -> [B, 1, C].
  Tensor block(int64_t l, const Tensor& x, Gpt2Cache* cache, bool last_only = false) const;
  // Block l of a decode step (models::fused_rows(B * T), a cache): ln_1 in
  // c_attn's product, q split off and k, v appended by qkv_append, attention
  // over the cache, the residual adds in the projections' products, ln_2 and
  // gelu in c_fc's.
  Tensor decode_block(int64_t l, const Tensor& x, Gpt2Cache& cache) const;
  // q [B, T, n_head, hd] at positions pos .. pos + T - 1 over layer l's cache
  // (its keys through pos + T - 1 in place) -> [B * T, C].
  Tensor attend(int64_t l, const Tensor& q, const Gpt2Cache& cache, int64_t pos) const;
  // Block l up to attention: x [B, T, C] -> ln_1, c_attn -> q, k, v packed
  // side by side, [B, T, 3C].
  Tensor qkv_packed(int64_t l, const Tensor& x) const;
  // The same split into heads: q, k, v, each [B, n_head, T, hd].
  QKV block_in(int64_t l, const Tensor& x) const;
  // The rest of block l after attention: x [B, T, C] its input, y [B * T, C]
  // the attention output (heads merged) -> the block's output [B, T, C].
  Tensor block_out(int64_t l, const Tensor& x, const Tensor& y) const;
  // ids [B, T] -> wte[ids], [B, T, C].
  Tensor token_rows(const Tensor& ids) const;
  // x [B, T, C] -> logits [B, T, V] over the (chunked or quantized) wte;
  // with `fused` ln_f in the product (a decode step's few rows).
  Tensor lm_head(const Tensor& x, bool fused = false) const;

  Gpt2Config config_;
  Gpt2Weights w_;
  std::optional<LoraConfig> adapter_;
};

// GPT-2's initialisation: weights normal(0, 0.02) (wte, wpe included), biases
// 0, layer norms weight 1 and bias 0, attn.c_proj and mlp.c_proj weights
// normal(0, 0.02 / sqrt(2 * n_layer)). Deterministic in `seed`.
std::vector<Gpt2HostTensor> gpt2_random_tensors(const Gpt2Config& config, uint64_t seed);

// The configurations of the released GPT-2 sizes: "124M", "355M", "774M",
// "1.5B", and "tiny" (vocab 50257, C 64, 2 layers, 2 heads, P 128) for tests
// and demos. ValueError for another name.
Gpt2Config gpt2_preset(std::string_view name);

// Writes DIR/config.json (Hugging Face keys), DIR/generation_config.json and
// DIR/model.safetensors (names without prefix, Conv1D layout), creating DIR.
void write_gpt2_checkpoint(const std::filesystem::path& dir, const Gpt2Config& config,
                           const std::vector<Gpt2HostTensor>& tensors);

// ---- Generation ---------------------------------------------------------------

struct Gpt2GenerateOptions {
  int64_t max_new_tokens = 32;
  SampleOptions sample;           // temperature 0: greedy; sample.step is set per token
  bool use_cache = true;          // false: recompute the whole sequence per token
  std::optional<uint32_t> eos;    // stop after producing this id
};

using Gpt2GenerateStats = GenerateStats;

// generate() (forge/generate.h) with GPT-2's options: on_token sees every id.
std::vector<uint32_t> gpt2_generate(const Gpt2& model, const std::vector<uint32_t>& prompt,
                                    const Gpt2GenerateOptions& options,
                                    const std::function<void(uint32_t)>& on_token = {},
                                    Gpt2GenerateStats* stats = nullptr);

}  // namespace forge
