// Which tensors GPT-2 and Llama checkpoints hold, with which shapes.
#include <map>
#include <set>

#include "forge/error.h"
#include "forge/model_config.h"

namespace forge {

namespace {

bool is_float(StDType t) { return t == StDType::F32 || t == StDType::F16 || t == StDType::BF16; }

class WeightChecker {
 public:
  WeightChecker(const ModelConfig& cfg, const std::vector<TensorInfo>& tensors, const std::string& source)
      : cfg_(cfg), source_(source) {
    for (const TensorInfo& t : tensors) by_name_[t.name] = &t;
  }

  WeightLayout& layout() { return out_; }

  // Picks the first prefix under which `probe` exists.
  void choose_prefix(std::initializer_list<const char*> prefixes, const std::string& probe) {
    for (const char* p : prefixes)
      if (by_name_.count(p + probe)) {
        out_.prefix = p;
        return;
      }
    std::string tried;
    for (const char* p : prefixes) tried += (tried.empty() ? "'" : " or '") + (p + probe) + "'";
    throw IoError("[weights] missing tensor " + tried + " for a " + arch_name(cfg_.arch) + " model in " + source_);
  }

  std::string full(const std::string& name) const { return out_.name(name); }
  bool has(const std::string& name) const { return by_name_.count(full(name)) != 0; }

  // A float tensor of exactly `shape`.
  void dense(const std::string& name, const Shape& shape) {
    const TensorInfo& t = find(name);
    if (!is_float(t.dtype))
      throw IoError("[weights] tensor '" + t.name + "' has dtype " + st_dtype_name(t.dtype) +
                    ", expected F32, F16 or BF16 in " + source_);
    expect_shape(t, shape);
    out_.parameters += numel(shape);
  }

  // A matrix applied as x @ W^T with W [out, in]: float, or MLX-quantized when
  // "<base>.scales" exists (u32 weight [out, in*bits/32], scales/biases [out, in/group]).
  // conv1d: a dense weight stored [in, out] (GPT-2's Conv1D); quantized it is
  // MLX's [out, in] rows all the same.
  void linear(const std::string& base, int64_t out, int64_t in, bool conv1d = false) {
    if (!has(base + ".scales")) return dense(base + ".weight", conv1d ? Shape{in, out} : Shape{out, in});
    if (!cfg_.quantization)
      throw IoError("[weights] tensor '" + full(base + ".scales") +
                    "' marks a quantized weight but the config has no 'quantization' in " + source_);
    const std::optional<QuantSpec> spec = cfg_.quantization->for_module(full(base));
    if (!spec)
      throw IoError("[weights] tensor '" + full(base + ".scales") + "' marks a quantized weight but the config's " +
                    "'quantization' leaves '" + full(base) + "' unquantized in " + source_);
    const int64_t bits = spec->bits, group = spec->group_size;
    if ((in * bits) % 32 != 0 || in % group != 0)
      throw IoError("[weights] '" + full(base + ".weight") + "' has " + std::to_string(in) +
                    " inputs, not a multiple of group_size " + std::to_string(group) + " and of 32/bits (bits " +
                    std::to_string(bits) + ") in " + source_);
    const TensorInfo& w = find(base + ".weight");
    if (w.dtype != StDType::U32)
      throw IoError("[weights] quantized tensor '" + w.name + "' has dtype " + st_dtype_name(w.dtype) +
                    ", expected U32 in " + source_);
    expect_shape(w, {out, in * bits / 32});
    for (const char* part : {".scales", ".biases"}) {
      const TensorInfo& s = find(base + part);
      if (!is_float(s.dtype))
        throw IoError("[weights] tensor '" + s.name + "' has dtype " + st_dtype_name(s.dtype) +
                      ", expected F32, F16 or BF16 in " + source_);
      expect_shape(s, {out, in / group});
    }
    out_.quantized = true;
    out_.parameters += out * in;
  }

  // The output projection [V, C]: absent means tied to the embedding.
  void lm_head(int64_t vocab, int64_t width, bool quantizable) {
    bool present = by_name_.count("lm_head.weight") != 0;
    out_.tied_embeddings = cfg_.tie_word_embeddings() || !present;
    if (!present && !cfg_.tie_word_embeddings())
      throw IoError("[weights] missing tensor 'lm_head.weight' [" + std::to_string(vocab) + ", " +
                    std::to_string(width) + "] (config has tie_word_embeddings false) in " + source_);
    if (!present || out_.tied_embeddings) return;
    if (quantizable) {
      linear("lm_head", vocab, width);
    } else {
      dense("lm_head.weight", {vocab, width});
    }
  }

  WeightLayout finish() {
    for (const auto& [name, t] : by_name_)
      if (!used_.count(name)) out_.unused.push_back(name);
    return out_;
  }

 private:
  const TensorInfo& find(const std::string& name) {
    auto it = by_name_.find(full(name));
    if (it == by_name_.end()) throw IoError("[weights] missing tensor '" + full(name) + "' in " + source_);
    used_.insert(it->first);
    return *it->second;
  }

  void expect_shape(const TensorInfo& t, const Shape& shape) const {
    if (t.shape != shape)
      throw IoError("[weights] tensor '" + t.name + "' has shape " + shape_str(t.shape) + ", expected " +
                    shape_str(shape) + " in " + source_);
  }

  const ModelConfig& cfg_;
  const std::string& source_;
  std::map<std::string, const TensorInfo*> by_name_;
  std::set<std::string> used_;
  WeightLayout out_;
};

void check_gpt2(const Gpt2Config& c, WeightChecker& k) {
  const int64_t C = c.n_embd, I = c.n_inner;
  k.choose_prefix({"transformer.", ""}, "wte.weight");
  k.linear("wte", c.vocab_size, C);  // [V, C], quantized like a Linear by MLX
  k.dense("wpe.weight", {c.n_positions, C});
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    for (const char* ln : {"ln_1", "ln_2"}) {
      k.dense(h + ln + ".weight", {C});
      k.dense(h + ln + ".bias", {C});
    }
    // Conv1D weights are [in, out] when dense.
    k.linear(h + "attn.c_attn", 3 * C, C, true);
    k.dense(h + "attn.c_attn.bias", {3 * C});
    k.linear(h + "attn.c_proj", C, C, true);
    k.dense(h + "attn.c_proj.bias", {C});
    k.linear(h + "mlp.c_fc", I, C, true);
    k.dense(h + "mlp.c_fc.bias", {I});
    k.linear(h + "mlp.c_proj", C, I, true);
    k.dense(h + "mlp.c_proj.bias", {C});
  }
  k.dense("ln_f.weight", {C});
  k.dense("ln_f.bias", {C});
  k.lm_head(c.vocab_size, C, false);
}

void check_llama(const LlamaConfig& c, WeightChecker& k) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  k.choose_prefix({"model.", ""}, "embed_tokens.weight");
  k.linear("embed_tokens", c.vocab_size, H);  // [V, H], quantized like a Linear by MLX
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    k.dense(p + "input_layernorm.weight", {H});
    k.dense(p + "post_attention_layernorm.weight", {H});
    // Linear weights are [out, in].
    const std::pair<const char*, std::pair<int64_t, int64_t>> attn[] = {
        {"q_proj", {q, H}}, {"k_proj", {kv, H}}, {"v_proj", {kv, H}}, {"o_proj", {H, q}}};
    for (const auto& [name, dims] : attn) {
      k.linear(p + "self_attn." + name, dims.first, dims.second);
      const bool bias = std::string(name) == "o_proj" ? c.attention_bias : c.has_bias_q();
      if (bias) k.dense(p + "self_attn." + name + ".bias", {dims.first});
    }
    const std::pair<const char*, std::pair<int64_t, int64_t>> mlp[] = {
        {"gate_proj", {I, H}}, {"up_proj", {I, H}}, {"down_proj", {H, I}}};
    for (const auto& [name, dims] : mlp) {
      k.linear(p + "mlp." + name, dims.first, dims.second);
      if (c.mlp_bias) k.dense(p + "mlp." + name + ".bias", {dims.first});
    }
  }
  k.dense("norm.weight", {H});
  k.lm_head(c.vocab_size, H, true);
}

}  // namespace

std::string WeightLayout::name(const std::string& unprefixed) const {
  // The output projection sits beside the transformer, not under its prefix:
  // "lm_head.weight" and, as a module path (a quantization override), "lm_head".
  if (unprefixed == "lm_head" || unprefixed.rfind("lm_head.", 0) == 0) return unprefixed;
  return prefix + unprefixed;
}

std::optional<Arch> guess_arch(const std::vector<TensorInfo>& tensors) {
  for (const TensorInfo& t : tensors) {
    if (t.name == "transformer.wte.weight" || t.name == "wte.weight") return Arch::Gpt2;
    if (t.name == "model.embed_tokens.weight" || t.name == "embed_tokens.weight") return Arch::Llama;
  }
  return std::nullopt;
}

WeightLayout check_weights(const ModelConfig& config, const std::vector<TensorInfo>& tensors,
                           const std::string& source) {
  WeightChecker k(config, tensors, source);
  k.layout().arch = config.arch;
  if (config.arch == Arch::Gpt2)
    check_gpt2(config.gpt2(), k);
  else
    check_llama(config.llama(), k);
  return k.finish();
}

}  // namespace forge
