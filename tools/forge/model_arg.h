// The --model argument every model-taking command shares: a local folder, or
// a Hugging Face id (org/name[@revision]) resolved through the local cache
// and downloaded when missing (forge/hub.h).
#pragma once
#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "forge/model.h"

namespace forge::cli {

std::filesystem::path model_folder(const std::string& spec);

// --dtype f32|bf16 of the commands that load a model: how its dense Linear
// weights are held on the device (load_model). Default f32.
CLI::Option* add_dtype_option(CLI::App& app, std::string& value);
// The DType a --dtype value names.
DType weights_dtype(const std::string& value);

// load_model with dense weights held as `weights`, then the LoRA adapter
// folder `adapter` (PEFT layout, forge/lora.h) applied when not empty: what
// --dtype and --adapter DIR do.
std::unique_ptr<CausalLM> load_model_and_adapter(const std::filesystem::path& dir, const Device& device,
                                                 const std::string& adapter, DType weights = DType::F32);

}  // namespace forge::cli
