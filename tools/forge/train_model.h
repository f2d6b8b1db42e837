// The model a `forge train` run trains, whatever its family: the training
// loop of cmd_train.cpp sees only this. GPT-2 (cmd_train.cpp) and the Llama
// family, fully or through a LoRA adapter (train_llama.cpp).
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "forge/device.h"
#include "forge/gpt2_train.h"
#include "train_checkpoint.h"
#include "train_settings.h"

namespace forge::cli {

class TrainModel {
 public:
  virtual ~TrainModel() = default;
  virtual std::string describe() const = 0;  // for the run's first line
  virtual int64_t context() const = 0;       // positions the model holds
  virtual int64_t vocab() const = 0;
  virtual int64_t steps_done() const = 0;
  // One optimizer step over the micro-batches (gradients accumulated).
  virtual Gpt2StepResult step(const std::vector<Gpt2MicroBatch>& micro) = 0;
  virtual float eval_loss(const Gpt2MicroBatch& mb) = 0;
  // Up to max_new ids after `prompt`, sampled at temperature 1, top-k 40.
  virtual std::vector<uint32_t> sample(const std::vector<uint32_t>& prompt, int64_t max_new, uint64_t seed) = 0;
  // The checkpoint of the current step into `dir` (train_checkpoint.h).
  virtual void save(const std::filesystem::path& dir, const CheckpointExtras& extras) = 0;
};

// A Llama-family model (the folder of --model, or the checkpoint `found`
// of a resumed run) with its trainer: every weight trains, or with the LoRA
// flags (train_lora.h) only an adapter. Checkpoints hold the model in the
// Hugging Face layout, or the adapter in PEFT's, beside optimizer.safetensors.
std::unique_ptr<TrainModel> llama_train_model(const TrainArgs& a, const std::optional<FoundCheckpoint>& found,
                                              const Device& dev);

}  // namespace forge::cli
