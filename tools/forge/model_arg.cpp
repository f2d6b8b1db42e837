#include "model_arg.h"

#include "forge/hub.h"

namespace forge::cli {

std::filesystem::path model_folder(const std::string& spec) { return resolve_model(spec, HubOptions::from_env()); }

}  // namespace forge::cli
