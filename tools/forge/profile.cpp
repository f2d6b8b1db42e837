#include "profile.h"

#include <cstdio>

namespace forge::cli {

void add_profile_flag(CLI::App& app) {
  app.add_flag_callback(
      "--profile", [] { gpu::request_profiling(); },
      "Time every GPU kernel (device timestamps, else the host's clock) and print a table to stderr at the end");
}

bool profiling(const Device& d) { return d.is_webgpu() && d.runtime().profiling(); }

nlohmann::json kernel_table(const std::vector<gpu::KernelTime>& times, double per) {
  nlohmann::json rows = nlohmann::json::array();
  double total = 0;
  for (const auto& k : times) total += k.ms;
  for (const auto& k : times) {
    nlohmann::json row{{"op", k.op}, {"kernel", k.kernel}, {"dispatches", double(k.dispatches) / per},
                       {"us", k.ms * 1e3 / per}, {"share", total > 0 ? k.ms / total : 0.0}};
    if (!k.grid.empty()) row["grid"] = k.grid;
    rows.push_back(std::move(row));
  }
  return rows;
}

void print_profile(const Device& d, const std::string& what, double per) {
  if (!gpu::profiling_requested()) return;
  if (!d.is_webgpu()) {
    std::fprintf(stderr, "forge: --profile times GPU kernels; %s ran on the CPU, so there is no kernel table\n",
                 what.c_str());
    return;
  }
  gpu::Runtime& rt = d.runtime();
  if (!rt.profiling()) return;
  const std::vector<gpu::KernelTime> times = rt.kernel_times();
  rt.reset_kernel_times();
  double total = 0;
  uint64_t dispatches = 0;
  for (const auto& k : times) {
    total += k.ms;
    dispatches += k.dispatches;
  }
  const char* unit = per == 1.0 ? "in all" : "a step";
  std::fprintf(stderr, "\nforge: kernel profile of %s on %s (%s), %s: %.3f ms in %.0f dispatches\n", what.c_str(),
               d.name().c_str(), rt.profile_clock().c_str(), unit, total / per, double(dispatches) / per);
  std::fprintf(stderr, "%10s %7s %11s %10s         %-22s %s\n", "total ms", "share", "dispatches", "us each", "op",
               "kernel");
  for (const auto& k : times)
    std::fprintf(stderr, "%10.3f %6.1f%% %11.1f %10.2f         %-22s %s\n", k.ms / per,
                 total > 0 ? 100.0 * k.ms / total : 0.0, double(k.dispatches) / per,
                 k.dispatches ? k.ms * 1e3 / double(k.dispatches) : 0.0, k.op.c_str(),
                 (k.grid.empty() ? k.kernel : k.kernel + "@" + k.grid).c_str());
}

}  // namespace forge::cli
