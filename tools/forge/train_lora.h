// The LoRA flags of `forge train` (--adapter DIR, --lora-rank R,
// --lora-alpha A, --lora-targets q_proj,..., --rslora): what they attach to
// the model before its trainer is built (forge/lora.h).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "forge/model.h"
#include "train_checkpoint.h"
#include "train_settings.h"

namespace forge::cli {

// True when the flags ask for LoRA training.
bool wants_lora(const TrainArgs& a);

// Attaches the adapter of --adapter, or a fresh one shaped by --lora-rank,
// --lora-alpha (default twice the rank), --lora-targets and --rslora, seeded
// by --seed. UsageError for contradicting flags; the library's errors for an
// adapter that does not fit the model.
void attach_lora(const TrainArgs& a, CausalLM& model);

// The folder a run's model loads from, whatever its family: the checkpoint
// `found` of a resumed run that trains every weight, else --model (a LoRA
// run's frozen base: its checkpoints hold the adapter alone); empty for a
// new random model.
std::filesystem::path run_weights_dir(const TrainArgs& a, const std::optional<FoundCheckpoint>& found);

// With the LoRA flags, the run's adapter onto the model of run_weights_dir:
// the resumed run's from its checkpoint, or attach_lora's; without, nothing.
void attach_run_adapter(const TrainArgs& a, const std::optional<FoundCheckpoint>& found, CausalLM& model);

// "; LoRA r R alpha A on T,... (the base frozen)" for the attached adapter,
// empty without one: the end of a run's first line.
std::string adapter_text(const CausalLM& model);

}  // namespace forge::cli
