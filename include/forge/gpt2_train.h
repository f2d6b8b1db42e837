// GPT-2 training: a forward pass that keeps the activations the backward
// needs, the explicit backward pass (embeddings, layer norms, attention, MLP,
// the tied LM head with cross-entropy) over a real batch axis, and a trainer
// holding the AdamW state (decoupled weight decay, bias correction), global
// gradient-norm clipping, dropout, gradient accumulation over micro-batches and
// a warmup + cosine learning-rate schedule.
//
//   forge::Gpt2 model = forge::Gpt2::load("models/gpt2", dev);
//   forge::Gpt2Trainer trainer(model, forge::Gpt2TrainConfig{});
//   forge::Gpt2MicroBatch mb{ids, forge::gpt2_shifted_targets(ids)};
//   forge::Gpt2StepResult r = trainer.step({mb});   // r.loss, r.grad_norm
//
// The trainer updates the model's weights in place: the weight tensors it
// holds share their storage with the model's. On WebGPU everything stays on
// the device; one step reads back two floats (the loss and the gradient norm).
// Threads: a trainer and its model are one thread's at a time.
//
// A token table split into row chunks (Gpt2Weights::wte on a device whose
// storage binding limit it exceeds) trains chunk by chunk: its gradient and
// optimizer state are chunked alike, and checkpoints hold it whole.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "forge/gpt2.h"
#include "forge/train.h"

namespace forge {

// Dropout probabilities (each in [0, 1)); all zero turns dropout off.
struct Gpt2Dropout {
  float embd = 0.0f;   // on wte[ids] + wpe
  float attn = 0.0f;   // on the attention probabilities
  float resid = 0.0f;  // on the output of attn.c_proj and mlp.c_proj, before the residual add
  bool any() const { return embd > 0 || attn > 0 || resid > 0; }
};

// Activations of one block kept for its backward. N = B * T rows.
struct Gpt2BlockActs {
  Tensor x_in;    // [B, T, C] block input (residual stream)
  Tensor ln1;     // [N, C] ln_1(x_in)
  Tensor qkv;     // [B, T, 3C] c_attn's output: each token's q, k and v heads side by side
  Tensor lse;     // [B, nh, T] the attention's log-sum-exp (its backward recomputes the probabilities)
  Tensor y;       // [N, C] the attention's output (heads side by side), the input of attn.c_proj
  Tensor x1;      // [B, T, C] residual after attention
  Tensor ln2;     // [N, C] ln_2(x1)
  Tensor fc;      // [N, I] c_fc output before GELU
  Tensor fc_gelu; // [N, I] gelu(fc), the input of mlp.c_proj
  uint64_t seed_attn = 0, seed_resid1 = 0, seed_resid2 = 0;  // dropout keys
};

// Everything the backward of one micro-batch needs.
struct Gpt2Activations {
  int64_t B = 0, T = 0;
  Tensor ids;                       // [B, T] u32 on the CPU
  std::vector<Gpt2BlockActs> h;     // n_layer blocks
  Tensor x_out;                     // [B, T, C] output of the last block
  Tensor lnf;                       // [N, C] ln_f(x_out)
  Gpt2Dropout dropout;
  uint64_t seed_embd = 0;
};

// Gradients, one tensor per parameter, shaped as Gpt2Weights (wte in the
// model's row chunks).
// Undefined tensors mean "no gradient yet" (a fresh step).
// With lora_only the gradients are those of the attached LoRA adapters alone
// (each Linear's lora.a and lora.b in g), the base frozen.
struct Gpt2Grads {
  Gpt2Weights g;
  bool lora_only = false;
  bool empty() const { return g.wpe.defined() == false; }
  void clear() { g = Gpt2Weights{}; }
};

// The parameters of a weights struct (or a gradients struct) by Hugging Face
// name, in the order of the checkpoint ("wte.weight", "wpe.weight",
// "h.0.ln_1.weight", ..., "ln_f.bias"). A chunked wte gives one entry per
// chunk, each named "wte.weight", in row order.
std::vector<std::pair<std::string, Tensor*>> gpt2_named_params(Gpt2Weights& w);

// HF labels for ids [B, T]: targets[b, t] = ids[b, t + 1], -1 (no label) at
// t = T - 1. Returns [B * T] values.
std::vector<int32_t> gpt2_shifted_targets(const Tensor& ids);

struct Gpt2MicroBatch {
  Tensor ids;                     // [B, T] u32 or i32 on the CPU
  std::vector<int32_t> targets;   // [B * T] next-token ids, -1 where a position has no label
};

// The forward pass over ids [B, T] keeping activations; dropout keys derive
// from `seed`. Does not compute the LM head.
Gpt2Activations gpt2_forward_train(const Gpt2& model, const Tensor& ids, const Gpt2Dropout& dropout,
                                   uint64_t seed);

// The LM head, cross-entropy and the whole backward of one micro-batch: adds
// the gradients of grad_scale * (sum of the target positions' NLL) into
// `grads` (assigning the tensors that are still undefined). Returns the NLL sum
// as f32 [1] on the model's device (no read back). The LM head runs over
// blocks of `head_rows` positions (rounded up to a multiple of 64; 0: as many
// as keep the [rows, V] logits within 256 MiB and one WebGPU binding).
Tensor gpt2_backward(const Gpt2& model, const Gpt2Activations& acts, const std::vector<int32_t>& targets,
                     float grad_scale, Gpt2Grads& grads, int64_t head_rows = 0);

// Mean NLL over the target positions without gradients (evaluation), read back.
float gpt2_eval_loss(const Gpt2& model, const Tensor& ids, const std::vector<int32_t>& targets);

// ---- Trainer ---------------------------------------------------------------------

// The schedule every trainer shares (forge/train.h).
using Gpt2LrSchedule = LrSchedule;

struct Gpt2TrainConfig {
  Gpt2LrSchedule schedule;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.01;
  // Which parameters decay, by HF name and shape; empty: every parameter
  // (torch.optim.AdamW(model.parameters())). gpt2_decay_matrices decays only
  // the 2-D weights (no biases or layer norms).
  std::function<bool(const std::string& name, const Shape& shape)> decays;
  float grad_clip = 0.0f;         // max global L2 norm; 0 = no clipping
  Gpt2Dropout dropout;
  uint64_t seed = 0;              // dropout keys: a pure function of (seed, step, micro-batch, site)
  int64_t head_rows = 0;          // LM-head block rows (gpt2_backward); 0: automatic
};

bool gpt2_decay_matrices(const std::string& name, const Shape& shape);

struct Gpt2StepResult {
  float loss = 0;        // mean NLL over every target position of the step
  float grad_norm = 0;   // global L2 norm before clipping
  double lr = 0;
};

class Gpt2Trainer {
 public:
  // `model` must outlive the trainer; its weights are updated in place. With
  // a LoRA adapter attached (forge/lora.h) only the adapter trains (the base
  // may then be quantized).
  Gpt2Trainer(const Gpt2& model, Gpt2TrainConfig config);

  // One optimizer step over micro-batches of equal size (gradient
  // accumulation): the loss is the mean over all their target positions.
  Gpt2StepResult step(const std::vector<Gpt2MicroBatch>& micro);

  int64_t steps_done() const { return opt_.steps_done(); }
  const Gpt2TrainConfig& config() const { return config_; }
  const Gpt2Grads& last_grads() const { return grads_; }
  // Keep the last step's (unclipped) gradients for inspection. With full
  // training they are views of the optimizer's flat gradient pages, which
  // the next step overwrites: copy (clone) what must outlive it.
  bool keep_grads = false;

  // The model's weights as host tensors (for write_gpt2_checkpoint).
  std::vector<Gpt2HostTensor> host_weights() const;
  // Optimizer state: "m.<name>", "v.<name>" host tensors and the step count.
  std::vector<Gpt2HostTensor> host_state() const;
  void load_state(const std::vector<Gpt2HostTensor>& state, int64_t steps_done);

 private:
  // The trained tensors of w (or of grads) by name: every parameter, or with
  // an adapter attached its A and B alone by PEFT key.
  std::vector<std::pair<std::string, Tensor*>> named(Gpt2Weights& w) const;

  const Gpt2& model_;
  Gpt2TrainConfig config_;
  bool lora_ = false;             // an adapter is attached: it alone trains, the base frozen
  Gpt2Weights w_;                 // shares storage with the model's weights
  AdamW opt_;                     // over w_ by name: flat weights, gradients and moments
  Gpt2Weights m_, v_;             // AdamW moments: views of opt_'s, shaped as the weights
  Gpt2Grads grads_;
};

// Optimizer state and progress next to a checkpoint: DIR/optimizer.safetensors
// (m.*, v.* and metadata step, seed and `extra`), written to a temp file and renamed.
void write_gpt2_train_state(const std::filesystem::path& dir, const Gpt2Trainer& trainer,
                            const std::map<std::string, std::string>& extra = {});
// Reads DIR/optimizer.safetensors into the trainer; returns its metadata.
std::map<std::string, std::string> read_gpt2_train_state(const std::filesystem::path& dir, Gpt2Trainer& trainer);

}  // namespace forge
