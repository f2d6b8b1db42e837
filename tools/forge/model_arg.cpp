#include "model_arg.h"

#include "cli_util.h"
#include "forge/hub.h"

namespace forge::cli {

std::filesystem::path model_folder(const std::string& spec) {
  if (std::filesystem::exists(spec)) return check_model_dir(spec);
  return resolve_model(spec, HubOptions::from_env());
}

}  // namespace forge::cli
