// --profile: where a WebGPU device's time goes, kernel by kernel. The flag
// asks for profiling before any device exists (the timestamp queries are set
// up when the device is created); the table goes to stderr at the end.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forge/device.h"
#include "gpu/runtime.h"

namespace forge::cli {

// Adds --profile (and honours $FORGE_PROFILE=1 as before).
void add_profile_flag(CLI::App& app);
// True when the device's dispatches are being timed.
bool profiling(const Device& d);
// Kernel times as JSON rows {op, kernel, dispatches, us, share}, `per` the
// number of steps they were summed over (dispatches and us are per step).
nlohmann::json kernel_table(const std::vector<gpu::KernelTime>& times, double per);
// Prints the table of `d`'s kernel times, longest total first, and clears
// them; on the CPU (nothing to time) says so. `what` names the work timed.
void print_profile(const Device& d, const std::string& what, double per = 1.0);

}  // namespace forge::cli
