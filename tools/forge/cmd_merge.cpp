// forge merge --model DIR --adapter ADAPTER --out OUT: folds a LoRA adapter
// (PEFT layout) into its base, W += scale * B A, and writes OUT in the
// Hugging Face layout (f32 weights, or bf16 with --dtype bf16; the base's
// config, tokenizer and generation files): a model that computes what base +
// adapter computed, with no adapter to carry. A quantized (MLX) base is
// dequantized: the merged model is dense (quantizing it again would round the
// delta away; forge quantize does so on request).
#include <cstdio>

#include "cli_util.h"
#include "command.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "hf_model_out.h"
#include "io/model_folder.h"
#include "model_arg.h"

namespace forge::cli {
namespace {

struct MergeArgs {
  std::string model, adapter, out, dtype = "f32";
};

void run(const MergeArgs& a) {
  const std::filesystem::path dir = model_folder(a.model);
  io::check_folder_destination(a.out);
  if (std::filesystem::exists(std::filesystem::path(a.out) / "model.safetensors") ||
      std::filesystem::exists(std::filesystem::path(a.out) / "config.json"))
    throw UsageError("--out '" + a.out + "' holds a model already; pass a new folder");
  std::unique_ptr<CausalLM> model = load_model_and_adapter(dir, Device::cpu(), a.adapter);
  const LoraConfig c = *attached_adapter(*model);
  merge_adapter(*model);
  write_hf_model(a.out, dir, model_weights(*model), weights_dtype(a.dtype));
  std::printf("merged %s (r %lld, alpha %g) into %s: %s\n", a.adapter.c_str(), (long long)c.rank, c.alpha,
              a.model.c_str(), a.out.c_str());
}

const bool registered = register_command(
    {"merge", "Fold a LoRA adapter into its base model and write the merged model", [](CLI::App& sub) {
       static MergeArgs a;
       sub.add_option("-m,--model", a.model, "Base model folder, or a Hugging Face id org/name[@revision]")->required();
       sub.add_option("--adapter", a.adapter, "LoRA adapter folder (PEFT layout)")->required();
       sub.add_option("--out", a.out, "Folder to write the merged model to")->required();
       add_dtype_option(sub, a.dtype)->description("The merged weights as written: f32, or bf16 (rounded; half the size)");
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
