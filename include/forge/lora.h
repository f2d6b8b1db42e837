// LoRA adapters in PEFT's layout, attached to a GPT-2 or Llama-family model
// (dense or MLX-quantized base): every targeted Linear computes
// y = W x + scale * B (A x), scale = lora_alpha / r (lora_alpha / sqrt(r)
// with rsLoRA).
//
//   auto model = forge::load_model("models/smollm2", dev);
//   forge::load_adapter(*model, "my-adapter");      // adapter_config.json + adapter_model.safetensors
//   forge::Tensor logits = model->forward(ids);     // with the adapter
//
//   forge::attach_new_adapter(*model, {.rank = 8, .alpha = 16}, seed);
//   forge::LlamaTrainer trainer(*model, cfg);        // trains A and B only, the base frozen
//   forge::save_adapter(*model, "out/adapter");
//
// The files: DIR/adapter_config.json (peft_type LORA, r, lora_alpha,
// target_modules, use_rslora, ...) and DIR/adapter_model.safetensors with
// base_model.model.<module>.lora_A.weight [r, in] and .lora_B.weight [out, r]
// for every targeted module (<module> as transformers names it:
// model.layers.N.self_attn.q_proj, or transformer.h.N.attn.c_attn for GPT-2,
// whose adapters PEFT marks fan_in_fan_out). Errors name the file, key and shapes.
//
// Threads: load_adapter, attach_new_adapter and merge_adapter change the
// model's weights: no other thread may use the model meanwhile (forge/model.h).
// read_adapter_config, attached_adapter, adapter_weights and save_adapter
// only read it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "forge/model.h"
#include "forge/train.h"

namespace forge {

struct LoraConfig {
  int64_t rank = 8;
  double alpha = 16;
  // Module names (the last part of a module's name: q_proj, k_proj, v_proj,
  // o_proj, gate_proj, up_proj, down_proj).
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
  bool rslora = false;
  // PEFT's flag for modules whose weight is stored [in, out] (GPT-2's
  // Conv1D): set for GPT-2 adapters. lora_A and lora_B keep their [r, in] and
  // [out, r] shapes either way; only merging into the base transposes.
  bool fan_in_fan_out = false;
  double scaling() const;  // alpha / rank, or alpha / sqrt(rank) with rsLoRA
};

// The Linear module names of a model LoRA can target ("q_proj", ...).
// ValueError for a family without adapter support.
std::vector<std::string> lora_target_names(const CausalLM& model);

// DIR/adapter_config.json. IoError when it is missing, not JSON (or holds a
// key twice) or a field has the wrong JSON type ("r": 2.5); ValueError
// naming the field for a value out of range or a setting forge does not
// implement (DoRA, per-module rank patterns, trained biases).
LoraConfig read_adapter_config(const std::filesystem::path& dir);

// Attaches the adapter in DIR to `model`, replacing one attached before.
// ShapeError naming the key when a tensor's shape does not fit the model (an
// adapter made for another base), ValueError for a target the model lacks or
// a key that is no LoRA weight of it, IoError for missing files.
void load_adapter(CausalLM& model, const std::filesystem::path& dir);

// Attaches a fresh adapter as PEFT initialises one: A uniform in
// +-1 / sqrt(in) (kaiming-uniform with a = sqrt(5)), B zero, so the model's
// output is unchanged until it trains. ValueError for rank < 1, a target the
// model lacks or no target at all.
void attach_new_adapter(CausalLM& model, const LoraConfig& config, uint64_t seed);

// The attached adapter's settings; nullopt when none is attached.
std::optional<LoraConfig> attached_adapter(const CausalLM& model);

// The attached adapter's tensors on the host by their PEFT key, in module
// order. ValueError when none is attached.
std::vector<HostTensor> adapter_weights(const CausalLM& model);

// Writes DIR/adapter_config.json and DIR/adapter_model.safetensors (each to a
// temporary file, then renamed into place). `base_model` goes into
// base_model_name_or_path.
void save_adapter(const CausalLM& model, const std::filesystem::path& dir, const std::string& base_model = "");

// Folds the attached adapter into the base weights (W += scale * B A) and
// detaches it; the model then computes what it computed with the adapter. A
// quantized base is first dequantized to f32 (every weight: the merged model
// is dense). ValueError when none is attached.
void merge_adapter(CausalLM& model);

// Every weight of a dense GPT-2 or Llama-family model by Hugging Face name,
// f32 on the host (what a merged model's model.safetensors holds; GPT-2's
// Conv1D weights [in, out] as its checkpoints hold them).
std::vector<HostTensor> model_weights(const CausalLM& model);

}  // namespace forge
