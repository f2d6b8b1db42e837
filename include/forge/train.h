// Training shared by every family: the learning-rate schedule, AdamW over
// named parameters with global-norm clipping, and full fine-tuning of a
// Llama-family model (Llama with any rope scaling, SmolLM2, Qwen2 with q/k/v
// bias, Mistral with its sliding window) loaded by forge::load_model.
//
//   auto model = forge::load_model("models/smollm2", dev);   // dense weights
//   forge::LlamaTrainer trainer(*model, forge::TrainConfig{});
//   forge::TrainBatch mb{ids, forge::gpt2_shifted_targets(ids)};
//   forge::TrainStepResult r = trainer.step({mb});           // r.loss, r.grad_norm
//
// The trainer updates the model's weights in place (its parameter tensors
// share their storage with the model's); on WebGPU everything stays on the
// device and a step reads back two floats (the loss and the gradient norm).
// GPT-2 has its own trainer (forge/gpt2_train.h) on the same schedule.
//
// Threads: a trainer and its model are one thread's at a time (a step
// writes the weights every reader of the model sees).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "forge/model.h"
#include "forge/tensor.h"

namespace forge {

// Linear warmup over `warmup` steps to `lr`, then cosine decay to lr * min_ratio
// at step `total` (constant after). cosine = false: constant lr after warmup.
struct LrSchedule {
  double lr = 6e-4;
  int64_t warmup = 0;
  int64_t total = 0;
  double min_ratio = 0.1;
  bool cosine = true;
  double at(int64_t step) const;  // step 0-based
};

// AdamW (torch semantics: decoupled weight decay, bias correction) with
// optional global-norm clipping.
struct AdamWConfig {
  LrSchedule schedule;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.01;
  // Which parameters decay, by name and shape; empty: every parameter
  // (torch.optim.AdamW(model.parameters())).
  std::function<bool(const std::string& name, const Shape& shape)> decays;
  float grad_clip = 0.0f;  // max global L2 norm; 0 = no clipping
};

// A parameter by its Hugging Face name; a table split into row chunks gives
// one entry per chunk under the same name, in row order.
struct NamedTensor {
  std::string name;
  Tensor value;  // a handle sharing the storage of the model's tensor
};

struct FlatParams;  // src/models/common/flat_params.h

// AdamW over a fixed list of parameters on one device. The parameters'
// storages move into flat buffers (pages of up to one storage binding),
// beside flat gradients and moments of the same layout, so that a step is
// one norm reduction and one fused clip + update dispatch per page, not
// several per tensor. Every handle to a parameter (the model's included)
// follows its storage; ValueError when two parameters share elements.
class AdamW {
 public:
  explicit AdamW(std::vector<NamedTensor> params, AdamWConfig config);

  struct Update {
    Tensor norm_sq;  // f32 [1] on the device: squared global norm before clipping
    double lr = 0;
  };
  // One update from `grads` (aligned with the parameters, not changed):
  // copied into the flat gradients (unless already there, as
  // gradient_views() lets a backward pass write them), clipped there when
  // configured, then every parameter updated in place.
  Update step(std::vector<Tensor>& grads);
  // Flat buffers the last step's norm and update ran over (one per
  // binding-limit page).
  size_t pages() const;

  int64_t steps_done() const { return step_; }
  const AdamWConfig& config() const { return config_; }
  // The moments per parameter (views into the flat moments), for
  // checkpoints, and putting saved ones back (ShapeError naming the
  // parameter when one does not fit).
  const std::vector<Tensor>& first_moments() const { return m_; }
  const std::vector<Tensor>& second_moments() const { return v_; }
  // The flat gradients per parameter (views shaped as the parameters): a
  // backward pass may write each gradient there (GradTargets), and step()
  // then reads it in place instead of copying it in.
  const std::vector<Tensor>& gradient_views() const;
  void restore(int64_t steps, const std::vector<Tensor>& m, const std::vector<Tensor>& v);
  const std::vector<NamedTensor>& params() const { return params_; }

 private:
  std::vector<NamedTensor> params_;
  std::shared_ptr<FlatParams> flat_;  // pages, and per parameter views of g, m, v
  std::vector<Tensor> m_, v_;         // flat_'s views, shaped as the parameters
  AdamWConfig config_;
  int64_t step_ = 0;
};

// One micro-batch: ids [B, T] u32 or i32 on the CPU, targets [B * T] next-token
// ids with -1 where a position has no label (gpt2_shifted_targets of
// forge/gpt2_train.h gives Hugging Face's shifted labels).
struct TrainBatch {
  Tensor ids;
  std::vector<int32_t> targets;
};

struct TrainConfig {
  AdamWConfig optimizer;
  int64_t head_rows = 0;  // LM-head block rows; 0: automatic
  // Dropout of the attention probabilities in training; unset: the config's
  // attention_dropout. Each mask is a pure function of (seed, step,
  // micro-batch, layer), so a resumed run drops what it would have dropped.
  std::optional<double> attention_dropout;
  uint64_t seed = 0;
};

struct TrainStepResult {
  float loss = 0;       // mean NLL over every target position of the step
  float grad_norm = 0;  // global L2 norm before clipping
  double lr = 0;
};

// A host copy of a tensor, for writing checkpoints.
struct HostTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;
};

class LlamaTrainer {
 public:
  // `model` is a Llama-family model from load_model or random_model; it must
  // outlive the trainer. Without an adapter every weight trains (dense
  // weights only: ValueError for a quantized model); with a LoRA adapter
  // attached (forge/lora.h) only its A and B train, the base frozen (dense
  // or quantized). ValueError for another family.
  LlamaTrainer(CausalLM& model, TrainConfig config);
  ~LlamaTrainer();

  // One optimizer step over micro-batches (gradient accumulation): the loss
  // is the mean over all their target positions.
  TrainStepResult step(const std::vector<TrainBatch>& micro);
  // Mean NLL over the target positions, without gradients.
  float eval_loss(const TrainBatch& batch) const;

  int64_t steps_done() const;
  // DIR/optimizer.safetensors: the AdamW moments ("m.<i>.<name>",
  // "v.<i>.<name>" for parameter i) and the step as metadata, written to a
  // temporary file and renamed. read_state puts them back; IoError naming
  // the file when they do not belong to this trainer's parameters.
  void write_state(const std::filesystem::path& dir) const;
  void read_state(const std::filesystem::path& dir);

  // The trained tensors by name (row chunks joined), f32 on the host: the
  // weights by Hugging Face name, or the adapter's A and B by PEFT key.
  std::vector<HostTensor> host_weights() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace forge
