// The --model argument every model-taking command shares: a local folder, or
// a Hugging Face id (org/name[@revision]) resolved through the local cache
// and downloaded when missing (forge/hub.h).
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "forge/model.h"

namespace forge::cli {

std::filesystem::path model_folder(const std::string& spec);

// load_model, then the LoRA adapter folder `adapter` (PEFT layout,
// forge/lora.h) applied when not empty: what --adapter DIR does.
std::unique_ptr<CausalLM> load_model_and_adapter(const std::filesystem::path& dir, const Device& device,
                                                 const std::string& adapter);

}  // namespace forge::cli
