// The LoRA flags of forge train (see train_lora.h).
#include "train_lora.h"

#include <cmath>

#include "cli_util.h"
#include "forge/lora.h"

namespace forge::cli {

bool wants_lora(const TrainArgs& a) {
  return !a.adapter.empty() || a.given.count("--lora-rank") || a.given.count("--lora-alpha") ||
         a.given.count("--lora-targets") || a.rslora || a.lora_rank > 0;
}

void attach_lora(const TrainArgs& a, CausalLM& model) {
  if (!a.adapter.empty()) {
    for (const char* f : {"--lora-rank", "--lora-alpha", "--lora-targets", "--rslora"})
      if (a.given.count(f))
        throw UsageError(std::string(f) + " shapes a new adapter; --adapter " + a.adapter +
                         " trains that one as its adapter_config.json shapes it: pass one or the other");
    if (!std::filesystem::is_directory(a.adapter))
      throw IoError("[train] --adapter '" + a.adapter + "' is not a folder (a PEFT LoRA adapter: adapter_config.json "
                    "and adapter_model.safetensors)");
    load_adapter(model, a.adapter);
    return;
  }
  if (a.lora_rank < 1)
    throw UsageError("--lora-rank " + std::to_string(a.lora_rank) + ": a LoRA adapter needs a rank of at least 1");
  LoraConfig c;
  c.rank = a.lora_rank;
  c.alpha = a.lora_alpha > 0 ? a.lora_alpha : 2.0 * double(a.lora_rank);
  c.rslora = a.rslora;
  c.targets.clear();
  // GPT-2's modules have other names: PEFT's default for it is c_attn.
  const std::string targets =
      !a.given.count("--lora-targets") && model.info().family == "gpt2" ? std::string("c_attn") : a.lora_targets;
  c.targets = split_list(targets, "--lora-targets");  // "q_proj,v_proj" or "q_proj, v_proj"
  attach_new_adapter(model, c, a.seed);
}

std::filesystem::path run_weights_dir(const TrainArgs& a, const std::optional<FoundCheckpoint>& found) {
  if (found && !wants_lora(a)) return found->dir;
  return a.model.empty() ? std::filesystem::path() : check_model_dir(a.model);
}

void attach_run_adapter(const TrainArgs& a, const std::optional<FoundCheckpoint>& found, CausalLM& model) {
  if (!wants_lora(a)) return;
  if (found) load_adapter(model, found->dir);
  else attach_lora(a, model);
}

std::string adapter_text(const CausalLM& model) {
  const std::optional<LoraConfig> c = attached_adapter(model);
  if (!c) return "";
  std::string targets;
  for (const std::string& t : c->targets) targets += (targets.empty() ? "" : ",") + t;
  return "; LoRA r " + std::to_string(c->rank) + " alpha " + std::to_string(int64_t(std::lround(c->alpha))) + " on " +
         targets + " (the base frozen)";
}

}  // namespace forge::cli
