// The --model argument every model-taking command shares: a local folder, or
// a Hugging Face id (org/name[@revision]) resolved through the local cache
// and downloaded when missing (forge/hub.h).
#pragma once
#include <filesystem>
#include <string>

namespace forge::cli {

std::filesystem::path model_folder(const std::string& spec);

}  // namespace forge::cli
