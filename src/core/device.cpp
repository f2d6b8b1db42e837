#include "forge/device.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "forge/error.h"
#include "gpu/runtime.h"

namespace forge {

Device::Device(std::shared_ptr<gpu::Runtime> runtime) : kind_(Kind::WebGPU), runtime_(std::move(runtime)) {}

Device Device::cpu() { return Device(); }

#if FORGE_HAVE_WEBGPU
// One WebGPU runtime per process, created on first use. The hardware probe's
// runtime is kept, so asking for "auto" and then "webgpu" opens one device.
namespace {
std::mutex g_mu;
bool g_probed = false;
std::shared_ptr<gpu::Runtime> g_runtime;

// Drivers loaded at run time (SwiftShader) tear themselves down at exit; the
// device must be gone first. An atexit handler registered after the driver
// was loaded runs before the driver's own destructors.
void release_at_exit() {
  static bool registered = false;
  if (!registered) std::atexit([] {
    std::lock_guard<std::mutex> lock(g_mu);
    g_runtime.reset();
  });
  registered = true;
}

void probe_hardware_locked() {
  if (g_probed) return;
  g_probed = true;
  g_runtime = gpu::create_runtime(gpu::AdapterPreference::Hardware);
  if (g_runtime) release_at_exit();
}
}  // namespace

Device Device::webgpu() {
  std::lock_guard<std::mutex> lock(g_mu);
  probe_hardware_locked();
  if (!g_runtime) {
    std::string notice;
    g_runtime = gpu::create_runtime(gpu::AdapterPreference::Software, &notice);
    if (!g_runtime) throw DeviceError("[webgpu] no WebGPU adapter found (neither a GPU nor SwiftShader)");
    if (!notice.empty()) std::fprintf(stderr, "forge: %s\n", notice.c_str());
    release_at_exit();
  }
  return Device(g_runtime);
}

bool Device::hardware_gpu_available() {
  std::lock_guard<std::mutex> lock(g_mu);
  probe_hardware_locked();
  return g_runtime && g_runtime->adapter().adapter_type != "cpu";
}
#else
Device Device::webgpu() { throw DeviceError("[webgpu] forge was built without the WebGPU backend"); }
bool Device::hardware_gpu_available() { return false; }
#endif

Device Device::from_name(std::string_view name) {
  if (name == "cpu") return cpu();
  if (name == "webgpu" || name == "gpu") return webgpu();
  if (name == "auto") return hardware_gpu_available() ? webgpu() : cpu();
  throw ValueError("[device] unknown device '" + std::string(name) + "' (expected auto, cpu or webgpu)");
}

gpu::Runtime& Device::runtime() const {
  if (!runtime_) throw DeviceError("[device] the CPU has no GPU runtime");
  return *runtime_;
}

std::string Device::name() const {
  if (is_cpu()) return "cpu";
  return "webgpu (" + runtime_->adapter().name + ")";
}

Device::MemoryStats Device::memory_stats() const {
  if (is_cpu()) return {};
  const gpu::Runtime::MemoryStats m = runtime_->memory_stats();
  return {m.in_use, m.pooled, m.peak, m.limit};
}

uint64_t Device::trim_memory() const { return is_cpu() ? 0 : runtime_->trim(); }

void Device::set_memory_limit(uint64_t bytes) const {
  if (!is_cpu()) runtime_->set_memory_limit(bytes);
}

}  // namespace forge
