// Training checkpoints of `forge train`: DIR holds the model in the Hugging
// Face layout (config.json, generation_config.json, model.safetensors: what
// `forge generate` and `forge eval` load), optimizer.safetensors (AdamW
// moments, with the step and seed as metadata) and, when the run has one, the
// tokenizer. The folder is written under a temporary name and renamed over
// the previous checkpoint, so an interruption leaves the old or the new one.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "forge/gpt2_train.h"

namespace forge::cli {

void save_train_checkpoint(const std::filesystem::path& dir, const Gpt2& model, const Gpt2Trainer& trainer,
                           const std::filesystem::path& tokenizer_file,
                           const std::map<std::string, std::string>& extra);

}  // namespace forge::cli
