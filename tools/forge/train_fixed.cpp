// forge train --fixed-batch IN.safetensors (parity mode): trains on IN's
// input_ids every step (HF labels: ids shifted inside, B * (T - 1) positions)
// and prints {"losses": [...], "grad_norm0": x} as the last line of stdout.
// GPT-2 folders train with Gpt2Trainer (--out gets a checkpoint with optimizer
// state); Llama-family folders (llama, qwen2, mistral; dense weights, bf16
// trained in f32) with LlamaTrainer, and --out gets the trained model in the
// Hugging Face layout: config.json and model.safetensors (f32, same names).
// With --adapter DIR or --lora-rank R (train_lora.h) only a LoRA adapter
// trains, the base frozen (dense or MLX-quantized; GPT-2 or Llama family),
// and --out gets the adapter in PEFT's layout.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "devices.h"
#include "profile.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/safetensors.h"
#include "forge/train.h"
#include "forge/train_fixed.h"
#include "hf_model_out.h"
#include "io/model_folder.h"
#include "train_checkpoint.h"
#include "train_lora.h"
#include "train_settings.h"

namespace forge::cli {

void run_fixed_batch(const TrainArgs& a) {
  if (a.model.empty()) throw UsageError("--fixed-batch needs --model DIR");
  if (!a.out.empty()) io::check_folder_destination(a.out);  // before the training, not after it
  const Device dev = resolve_devices(a.device)[0];
  const bool lora = wants_lora(a);
  auto model = load_model(check_model_dir(a.model), dev, train_weights_dtype(a));
  auto* gpt2 = dynamic_cast<Gpt2*>(model.get());
  if (lora) attach_lora(a, *model);
  if (!std::filesystem::is_regular_file(a.fixed_batch))
    throw IoError("[train] --fixed-batch file '" + a.fixed_batch + "' does not exist");
  const Tensor ids = read_input_ids(a.fixed_batch, model->vocab_size(), "train");
  FixedBatchTrainer trainer(*model, make_train_config(a, true));  // the same flags, the same schedule
  nlohmann::json losses = nlohmann::json::array();
  double grad_norm0 = 0;
  for (int64_t s = 0; s < a.steps; ++s) {
    const TrainStepResult r = trainer.step(ids);
    if (s == 0) grad_norm0 = r.grad_norm;
    losses.push_back(r.loss);
    std::fprintf(stderr, "step %lld loss %.6f grad_norm %.6f\n", (long long)s, r.loss, r.grad_norm);
    if (diverged(r.loss, r.grad_norm))
      stop_diverged(s, r.loss, r.grad_norm, a.out.empty() ? "no --out to write" : "nothing was written to " + a.out,
                    s == 0);
  }
  if (!a.out.empty() && lora)
    save_adapter(*model, a.out, a.model);
  else if (!a.out.empty() && gpt2)
    save_train_checkpoint(std::filesystem::path(a.out) / "checkpoint", *gpt2, *trainer.gpt2(),
                          {.settings = train_settings_json(a)});
  else if (!a.out.empty()) write_hf_model(a.out, a.model, trainer.llama()->host_weights());
  std::printf("%s\n", nlohmann::json{{"losses", losses}, {"grad_norm0", grad_norm0}}.dump().c_str());
  std::fflush(stdout);
  print_profile(dev, std::to_string(a.steps) + " training steps", double(a.steps));
}

}  // namespace forge::cli
