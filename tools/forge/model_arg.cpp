#include "model_arg.h"

#include "cli_util.h"
#include "forge/error.h"
#include "forge/hub.h"
#include "forge/lora.h"

namespace forge::cli {

std::filesystem::path model_folder(const std::string& spec) {
  if (std::filesystem::exists(spec)) return check_model_dir(spec);
  if (!parse_hub_spec(spec))
    throw IoError("[model] model directory '" + spec + "' does not exist (nor is it a Hugging Face id org/name)");
  return resolve_model(spec, HubOptions::from_env());
}

CLI::Option* add_dtype_option(CLI::App& app, std::string& value) {
  return app
      .add_option("--dtype", value,
                  "Dense weights on the device: f32, or bf16 (half the memory and decode traffic, computed in f32; "
                  "MLX-quantized weights stay quantized)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
}

DType weights_dtype(const std::string& value) {
  if (value == "f32") return DType::F32;
  if (value == "bf16") return DType::BF16;
  throw UsageError("--dtype must be f32 or bf16, got '" + value + "'");
}

std::unique_ptr<CausalLM> load_model_and_adapter(const std::filesystem::path& dir, const Device& device,
                                                 const std::string& adapter, DType weights) {
  std::unique_ptr<CausalLM> model = load_model(dir, device, weights);
  if (!adapter.empty()) {
    if (!std::filesystem::is_directory(adapter))
      throw IoError("[model] --adapter '" + adapter + "' is not a folder (a PEFT LoRA adapter: adapter_config.json "
                    "and adapter_model.safetensors)");
    load_adapter(*model, adapter);
  }
  return model;
}

}  // namespace forge::cli
