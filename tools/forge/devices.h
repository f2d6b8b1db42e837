// The --device option shared by every command: auto | cpu | webgpu, and
// "all" for commands that compare devices.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "forge/device.h"

namespace forge::cli {

// Adds --device with the given default; `allow_all` also accepts "all".
CLI::Option* add_device_option(CLI::App& app, std::string& value, bool allow_all = false);
// The devices a value names: one for auto/cpu/webgpu, CPU then WebGPU for all.
std::vector<Device> resolve_devices(const std::string& value);

}  // namespace forge::cli
