// The LoRA flags of `forge train` (--adapter DIR, --lora-rank R,
// --lora-alpha A, --lora-targets q_proj,..., --rslora): what they attach to
// the model before its trainer is built (forge/lora.h).
#pragma once
#include "forge/model.h"
#include "train_settings.h"

namespace forge::cli {

// True when the flags ask for LoRA training.
bool wants_lora(const TrainArgs& a);

// Attaches the adapter of --adapter, or a fresh one shaped by --lora-rank,
// --lora-alpha (default twice the rank), --lora-targets and --rslora, seeded
// by --seed. UsageError for contradicting flags; the library's errors for an
// adapter that does not fit the model.
void attach_lora(const TrainArgs& a, CausalLM& model);

}  // namespace forge::cli
