// The Llama family as one block definition: Llama 2/3.x, SmolLM2, TinyLlama,
// Qwen2 (q/k/v bias) and Mistral (sliding window) differ only in config data
// (biases, rope scaling, windows, tied or untied output), never in code paths.
//
// Block l (pre-norm, RMSNorm):
//   h = rms_norm(x)                         x [B, T, H]
//   q, k, v = q_proj(h), k_proj(h), v_proj(h)   [B, T, nh | nkv, hd]
//   rope(q), rope(k)                        (scaled frequencies, one table per forward)
//   a = attention(q, K, V)                  causal, GQA, window of layer l
//   x1 = x + o_proj(a)
//   x' = x1 + down_proj(silu(gate_proj(n)) * up_proj(n)),  n = rms_norm(x1)
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "forge/lora.h"
#include "forge/model.h"
#include "models/common/weights.h"

namespace forge::models {

struct LlamaLayer {
  Tensor input_norm;      // [H]
  Tensor post_norm;       // [H]
  Linear q, k, v, o;      // q [nh*hd, H], k, v [nkv*hd, H], o [H, nh*hd]
  Linear gate, up, down;  // gate, up [I, H], down [H, I]
};

class LlamaModel : public CausalLM {
 public:
  // From named tensors laid out as Hugging Face names them (prefix "model."
  // or none; "lm_head.weight" when untied). `config` must be a Llama config
  // whose tensors check_weights accepted. `dense`: how the dense Linear
  // weights are held on the device, f32 or bf16 (Linear::load).
  LlamaModel(const ModelConfig& config, const TensorSource& src, const std::string& prefix, const Device& device,
             DType dense = DType::F32);

  const LlamaConfig& config() const { return c_; }
  // What training reads (models/llama/train.h): handles sharing the storage.
  const std::vector<LlamaLayer>& layers() const { return layers_; }
  const Embedding& embed() const { return embed_; }
  const Embedding& lm_head() const { return lm_head_; }  // untied only
  const Tensor& final_norm() const { return norm_; }
  bool tied() const { return tied_; }
  const std::vector<float>& inv_freq() const { return inv_freq_; }
  // For attaching LoRA adapters (forge/lora.h): the layers to change and the
  // attached adapter's settings.
  std::vector<LlamaLayer>& mutable_layers() { return layers_; }
  Embedding& mutable_embed() { return embed_; }
  Embedding& mutable_lm_head() { return lm_head_; }
  std::optional<LoraConfig>& adapter() { return adapter_; }
  const std::optional<LoraConfig>& adapter() const { return adapter_; }

  Tensor forward(const Tensor& ids, std::vector<Tensor>* hidden = nullptr) const override;
  KvCache new_cache(int64_t batch, int64_t capacity = 0) const override;
  Tensor forward_cached(const Tensor& ids, KvCache& cache) const override;
  // Per-row positions for continuous batching (forward_rows.cpp).
  bool has_row_decode() const override { return true; }
  Tensor prefill_row(const Tensor& ids, KvCache& cache, int64_t row) const override;
  Tensor decode_rows(const Tensor& ids, KvCache& cache, const std::vector<int64_t>& pos) const override;

 private:
  // The residual stream between layers: x, plus the last MLP output while it
  // waits to be added in the next norm's pass (x' = x + pending). A fused
  // stream (few rows, models::fused_rows: a decode step) has no norm passes of its own: the
  // products that read it apply the norms as they read it, and o_proj and
  // down_proj add their outputs to it (pending stays undefined).
  struct Stream {
    Tensor x;        // [B, T, H] or [N, H]
    Tensor pending;  // like x, or undefined
    bool fused = false;
  };
  // The logits [N, V] of the stream's rows [N, H] after the final norm.
  Tensor head(Stream& s) const;
  // The stream at the last of each sequence's T positions ([B * T, H] rows
  // -> [B, H]).
  static Stream last_rows(const Stream& s, int64_t B, int64_t T);
  struct Qkv {
    Tensor q, k, v;  // [B, T, nh | nkv, hd], rope not applied yet
    Tensor packed;   // or, where asked for and the weights are joined, the one product [B, T, (nh + 2 nkv) hd]
  };
  // Block l up to attention: the stream's norm (which folds pending into
  // s.x), then q, k and v; `packed_ok`: as one product where the weights
  // allow (rope_append_packed takes it apart), for an unfused stream.
  Qkv project(int64_t l, Stream& s, bool packed_ok = false) const;
  // Block l after attention, a [B * T, nh * hd]: s.x becomes x + o_proj(a)
  // and s.pending the MLP's output.
  void finish(int64_t l, Stream& s, const Tensor& a) const;
  // The stream through layer l at positions pos .. pos + T - 1 with the rope
  // table of those positions; cache may be null (positions 0 .. T - 1). With
  // `last_only`, a cache and more than one position in an unfused stream,
  // every position's k and v go into the cache but only each sequence's last
  // position goes on: s becomes [B, 1, H].
  void layer(int64_t l, Stream& s, const Tensor& rope, KvCache* cache, bool last_only = false) const;
  // rms_norm(x + pending) with `weight`; folds pending into s.x.
  Tensor norm_stream(Stream& s, const Tensor& weight) const;
  // x + pending, as the hidden state after a layer.
  static Tensor stream_value(const Stream& s);
  // Attention of q [B, T, nh, hd] over the new k, v [B, T, nkv, hd] and what
  // the cache holds: rope applied to q and k (in place) with `rope`, k and v
  // appended to the cache. With `last_only` (and a cache) only each
  // sequence's last query attends: -> [B, 1, nh, hd].
  Tensor attend(int64_t l, Tensor& q, Tensor& k, const Tensor& v, const Tensor& rope, KvCache* cache,
                bool last_only = false) const;
  // attend's part after q [B, T, nh, hd] is rotated and the new keys and
  // values are in a plain (or not yet wrapped) cache at cache.len.
  Tensor attend_appended(int64_t l, const Tensor& q, const KvCache& cache, bool last_only) const;
  // Normed rows n [N, H] -> logits [N, V].
  Tensor logits(const Tensor& n) const;
  int64_t ring_window() const;  // the window of every layer when all share one, else 0

  LlamaConfig c_;
  std::vector<float> inv_freq_;  // [hd / 2], rope scaling applied
  Embedding embed_;
  std::vector<LlamaLayer> layers_;
  Tensor norm_;                  // [H]
  Embedding lm_head_;            // untied output layer (vocab rows), else unused
  bool tied_ = true;
  std::optional<LoraConfig> adapter_;
};

// The Linears of `layers` by module name as transformers names them
// ("model.layers.0.self_attn.q_proj", ..., "model.layers.0.mlp.down_proj"),
// layer by layer in that order.
std::vector<std::pair<std::string, Linear*>> llama_linears(std::vector<LlamaLayer>& layers);

// RoPE frequencies [head_dim / 2] of a Llama config: plain theta^(-2i/hd),
// then the config's scaling (linear: / factor; llama3: the wavelength-banded
// blend of transformers' _compute_llama3_parameters).
std::vector<float> llama_inv_freq(const LlamaConfig& c);

}  // namespace forge::models
