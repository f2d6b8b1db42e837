#include "model_arg.h"

#include "cli_util.h"
#include "forge/error.h"
#include "forge/hub.h"

namespace forge::cli {

std::filesystem::path model_folder(const std::string& spec) {
  if (std::filesystem::exists(spec)) return check_model_dir(spec);
  if (!parse_hub_spec(spec))
    throw IoError("[model] model directory '" + spec + "' does not exist (nor is it a Hugging Face id org/name)");
  return resolve_model(spec, HubOptions::from_env());
}

}  // namespace forge::cli
