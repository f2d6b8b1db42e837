#include "devices.h"

namespace forge::cli {

CLI::Option* add_device_option(CLI::App& app, std::string& value, bool allow_all) {
  std::vector<std::string> choices{"auto", "cpu", "webgpu"};
  if (allow_all) choices.push_back("all");
  return app.add_option("--device", value, "Where to compute: auto (a GPU if present, else the CPU), cpu, webgpu" +
                                               std::string(allow_all ? ", all" : ""))
      ->check(CLI::IsMember(choices))
      ->capture_default_str();
}

std::vector<Device> resolve_devices(const std::string& value) {
  if (value == "all") return {Device::cpu(), Device::webgpu()};
  return {Device::from_name(value)};
}

}  // namespace forge::cli
