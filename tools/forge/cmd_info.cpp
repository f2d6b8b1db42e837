// forge info: the version, the devices found, and which one `auto` picks.
#include <nlohmann/json.hpp>
#include <thread>

#include "command.h"
#include "forge/device.h"
#include "gpu/runtime.h"

namespace forge::cli {
namespace {

nlohmann::json describe_runtime(const gpu::Runtime& rt) {
  const auto& a = rt.adapter();
  const auto& l = rt.limits();
  return {{"kind", "webgpu"},
          {"adapter", a.name},
          {"vendor", a.vendor},
          {"backend", a.backend},
          {"adapter_type", a.adapter_type},
          {"driver", a.driver},
          {"features", {{"shader_f16", a.shader_f16}, {"subgroups", a.subgroups}, {"timestamp_query", a.timestamp_query}}},
          {"subgroup_sizes", {l.subgroup_min, l.subgroup_max}},
          {"subgroup_sums", a.subgroup_size},
          {"limits",
           {{"max_storage_binding_bytes", l.max_storage_binding},
            {"max_buffer_bytes", l.max_buffer},
            {"max_workgroup_invocations", l.max_workgroup_invocations},
            {"max_workgroup_size", {l.max_workgroup_size_x, l.max_workgroup_size_y, l.max_workgroup_size_z}},
            {"max_workgroups_per_dim", l.max_workgroups_per_dim},
            {"max_workgroup_storage_bytes", l.max_workgroup_storage},
            {"storage_offset_alignment", l.storage_offset_alignment},
            {"max_storage_buffers_per_stage", l.max_storage_buffers_per_stage}}}};
}

void run_info(bool json) {
  nlohmann::json out;
  out["version"] = FORGE_VERSION;
  nlohmann::json cpu = {
      {"kind", "cpu"}, {"threads", std::thread::hardware_concurrency()}, {"blas", Device::cpu_blas()}};
  out["devices"] = nlohmann::json::array({cpu});
  std::string auto_pick = "cpu";
#if FORGE_HAVE_WEBGPU
  // Hardware first (before the software adapter changes the Vulkan driver list).
  if (auto hw = gpu::create_runtime(gpu::AdapterPreference::Hardware)) {
    out["devices"].push_back(describe_runtime(*hw));
    auto_pick = "webgpu (" + hw->adapter().name + ")";
  }
  if (auto sw = gpu::create_runtime(gpu::AdapterPreference::Software)) out["devices"].push_back(describe_runtime(*sw));
  out["webgpu"] = "dawn";
#else
  out["webgpu"] = "not built";
#endif
  out["auto"] = auto_pick;
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("forge %s\n", FORGE_VERSION);
  for (const auto& d : out["devices"]) {
    if (d["kind"] == "cpu") {
      std::printf("  cpu: %u threads, blas %s\n", d["threads"].get<unsigned>(), d["blas"].get<std::string>().c_str());
    } else {
      std::printf("  webgpu: %s (%s, %s), max storage binding %llu MiB\n", d["adapter"].get<std::string>().c_str(),
                  d["backend"].get<std::string>().c_str(), d["adapter_type"].get<std::string>().c_str(),
                  (unsigned long long)(d["limits"]["max_storage_binding_bytes"].get<uint64_t>() >> 20));
    }
  }
  std::printf("  auto picks: %s\n", auto_pick.c_str());
}

const bool registered = register_command({"info", "Show the version and the devices found", [](CLI::App& sub) {
                                            static bool json = false;
                                            sub.add_flag("--json", json, "Print JSON");
                                            sub.callback([] { run_info(json); });
                                          }});

}  // namespace
}  // namespace forge::cli
