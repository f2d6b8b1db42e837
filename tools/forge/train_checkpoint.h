// Training checkpoints of `forge train`: DIR holds the model in the Hugging
// Face layout (config.json, generation_config.json, model.safetensors: what
// `forge generate` and `forge eval` load), optimizer.safetensors (AdamW
// moments, with the step and seed as metadata), the tokenizer when the run
// has one, and last train.json: the step, the run's settings and the size of
// every other file. train.json marks the folder complete.
//
// A save writes DIR.tmp completely (every file synced), moves DIR aside to
// DIR.old, renames DIR.tmp to DIR and removes DIR.old. A process killed at any
// point leaves at least one complete folder among DIR, DIR.tmp and DIR.old;
// recover_train_checkpoint finds the newest and makes it DIR again.
//
// Fault injection for tests: FORGE_FAULT_KILL_AT=checkpoint-written (DIR.tmp
// complete, nothing renamed) or checkpoint-aside (DIR moved to DIR.old, DIR.tmp
// not yet renamed) makes the process SIGKILL itself at that point of a save.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "forge/gpt2_train.h"

namespace forge::cli {

// What a checkpoint carries besides the model and the optimizer state.
struct CheckpointExtras {
  std::string tokenizer_json;            // stored as DIR/tokenizer.json unless empty
  std::optional<uint32_t> eos_token_id;  // the tokenizer's, for config.json (GPT-2's 50256 otherwise)
  nlohmann::json settings;               // the run's settings, stored in train.json
};

// Writes the checkpoint for the trainer's current step. On an error (a full
// disk, say) DIR.tmp is removed and DIR is left as it was.
void save_train_checkpoint(const std::filesystem::path& dir, const Gpt2& model, const Gpt2Trainer& trainer,
                           const CheckpointExtras& extras);
// The same for any model: `write` puts the model's files and optimizer state
// into the folder it is given; the tokenizer and train.json (at `step`) follow.
void save_train_checkpoint(const std::filesystem::path& dir, int64_t step, const CheckpointExtras& extras,
                           const std::function<void(const std::filesystem::path&)>& write);

struct FoundCheckpoint {
  std::filesystem::path dir;  // the checkpoint folder (DIR after recovery)
  int64_t step = 0;
  nlohmann::json settings;    // CheckpointExtras::settings of the save
  std::string recovered_from; // "checkpoint.old" / "checkpoint.tmp" when a save had been cut short; else empty
};

// The newest complete checkpoint among DIR, DIR.tmp and DIR.old, moved to DIR
// (the others removed); nullopt when none is complete.
std::optional<FoundCheckpoint> recover_train_checkpoint(const std::filesystem::path& dir);

}  // namespace forge::cli
