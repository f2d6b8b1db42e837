// Adapter choice for the native runtime: a hardware GPU when there is one;
// SwiftShader (a Vulkan driver on the CPU, shipped by Chromium) when asked for.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "forge/error.h"
#include "webgpu/dawn/callback_state.h"
#include "webgpu/dawn/dawn_runtime.h"

namespace forge::gpu {

namespace {

using namespace forge::webgpu;

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The SwiftShader ICD manifest: $FORGE_SWIFTSHADER_ICD, else Chromium's.
std::string swiftshader_icd() {
  if (const char* env = std::getenv("FORGE_SWIFTSHADER_ICD")) {
    // A wrong path would reach the Vulkan loader, which prints its own
    // multi-line warnings and finds no adapter; say what is wrong instead.
    struct stat st;
    if (::stat(env, &st) != 0 || !S_ISREG(st.st_mode))
      throw ValueError(std::string("[webgpu] FORGE_SWIFTSHADER_ICD='") + env + "' is not a file");
    return env;
  }
  for (const char* p : {"/usr/lib/chromium/vk_swiftshader_icd.json", "/usr/lib64/chromium/vk_swiftshader_icd.json"})
    if (file_exists(p)) return p;
  return {};
}

const char* backend_name(WGPUBackendType t) {
  switch (t) {
    case WGPUBackendType_Null: return "null";
    case WGPUBackendType_WebGPU: return "webgpu";
    case WGPUBackendType_D3D11: return "d3d11";
    case WGPUBackendType_D3D12: return "d3d12";
    case WGPUBackendType_Metal: return "metal";
    case WGPUBackendType_Vulkan: return "vulkan";
    case WGPUBackendType_OpenGL: return "opengl";
    case WGPUBackendType_OpenGLES: return "opengles";
    default: return "unknown";
  }
}

const char* adapter_type_name(WGPUAdapterType t) {
  switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "discrete-gpu";
    case WGPUAdapterType_IntegratedGPU: return "integrated-gpu";
    case WGPUAdapterType_CPU: return "cpu";
    default: return "unknown";
  }
}

// Silences stderr for its lifetime: probing for a hardware adapter on a
// machine without one makes the Vulkan loader and Dawn print errors about the
// drivers they skipped, which say nothing useful to a user there.
// FORGE_WEBGPU_VERBOSE=1 keeps them.
class QuietStderr {
 public:
  QuietStderr() {
    if (std::getenv("FORGE_WEBGPU_VERBOSE")) return;
    std::fflush(stderr);
    saved_ = ::dup(2);
    int null = ::open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null >= 0) ::dup2(null, 2);
    if (null >= 0) ::close(null);
  }
  ~QuietStderr() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  int saved_ = -1;
};

AdapterHandle request_adapter(WGPUInstance instance) {
  WGPURequestAdapterOptions opts{};
  opts.featureLevel = WGPUFeatureLevel_Core;
  opts.powerPreference = WGPUPowerPreference_HighPerformance;
  struct Result {
    bool done = false;
    WGPUAdapter adapter = nullptr;
  };
  auto result = std::make_shared<Result>();
  WGPURequestAdapterCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView, void* r, void*) {
    auto res = take_callback_ref<Result>(r);
    res->done = true;
    if (status == WGPURequestAdapterStatus_Success) res->adapter = adapter;
  };
  cb.userdata1 = callback_ref(result);
  wgpuInstanceRequestAdapter(instance, &opts, cb);
  auto start = std::chrono::steady_clock::now();
  while (!result->done) {
    wgpuInstanceProcessEvents(instance);
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) return AdapterHandle();
    std::this_thread::yield();
  }
  return AdapterHandle(result->adapter);
}

AdapterInfo describe(WGPUAdapter adapter, WGPUAdapterType* type, WGPUBackendType* backend) {
  WGPUAdapterInfo raw{};
  AdapterInfo info;
  if (wgpuAdapterGetInfo(adapter, &raw) == WGPUStatus_Success) {
    info.name = to_string(raw.device);
    info.vendor = to_string(raw.vendor);
    info.driver = to_string(raw.description);
    info.backend = backend_name(raw.backendType);
    info.adapter_type = adapter_type_name(raw.adapterType);
    *type = raw.adapterType;
    *backend = raw.backendType;
    wgpuAdapterInfoFreeMembers(raw);
  }
  info.shader_f16 = wgpuAdapterHasFeature(adapter, WGPUFeatureName_ShaderF16);
  info.subgroups = wgpuAdapterHasFeature(adapter, WGPUFeatureName_Subgroups);
  info.timestamp_query = wgpuAdapterHasFeature(adapter, WGPUFeatureName_TimestampQuery);
  if (info.name.empty()) info.name = info.driver.empty() ? "unnamed adapter" : info.driver;
  return info;
}

}  // namespace

std::shared_ptr<Runtime> create_runtime(AdapterPreference pref, std::string* notice) {
  // The Vulkan loader warns without a runtime dir; any writable folder will do.
  if (!std::getenv("XDG_RUNTIME_DIR")) ::setenv("XDG_RUNTIME_DIR", "/tmp", 0);
  // Dawn refuses Mesa's lavapipe (it lacks a required Vulkan feature) after
  // printing a warning; hide that driver from the loader unless the user
  // chose drivers themselves.
  if (!std::getenv("VK_LOADER_DRIVERS_DISABLE") && !std::getenv("VK_LOADER_DRIVERS_SELECT") &&
      !std::getenv("VK_ICD_FILENAMES") && !std::getenv("VK_DRIVER_FILES"))
    ::setenv("VK_LOADER_DRIVERS_DISABLE", "*lvp_icd*", 0);

  if (pref != AdapterPreference::Software) {
    InstanceHandle instance;
    AdapterHandle adapter;
    {
      QuietStderr quiet;
      instance = InstanceHandle(wgpuCreateInstance(nullptr));
      if (instance) adapter = request_adapter(instance.get());
    }
    if (instance) {
      if (adapter) {
        WGPUAdapterType type = WGPUAdapterType_Unknown;
        WGPUBackendType backend = WGPUBackendType_Null;
        AdapterInfo info = describe(adapter.get(), &type, &backend);
        bool hardware = backend != WGPUBackendType_Null && type != WGPUAdapterType_CPU;
        if (hardware || (pref == AdapterPreference::Any && backend != WGPUBackendType_Null)) {
          auto rt = std::make_shared<DawnRuntime>(std::move(instance), std::move(adapter), info);
          rt->open_device(/*disable_robustness=*/hardware && !std::getenv("FORGE_WEBGPU_ROBUST"));
          return rt;
        }
      }
    }
    if (pref == AdapterPreference::Hardware) return nullptr;
  }

  // SwiftShader: point the Vulkan loader at its manifest before the instance
  // exists, so that it is the only Vulkan driver this instance sees.
  std::string icd = swiftshader_icd();
  if (icd.empty()) return nullptr;
  ::setenv("VK_ICD_FILENAMES", icd.c_str(), 1);
  ::setenv("VK_DRIVER_FILES", icd.c_str(), 1);
  InstanceHandle instance(wgpuCreateInstance(nullptr));
  if (!instance) return nullptr;
  AdapterHandle adapter = request_adapter(instance.get());
  if (!adapter) return nullptr;
  WGPUAdapterType type = WGPUAdapterType_Unknown;
  WGPUBackendType backend = WGPUBackendType_Null;
  AdapterInfo info = describe(adapter.get(), &type, &backend);
  if (backend == WGPUBackendType_Null) return nullptr;
  if (notice) *notice = "no GPU found; using the software adapter " + info.name + " (" + info.backend + ")";
  auto rt = std::make_shared<DawnRuntime>(std::move(instance), std::move(adapter), info);
  rt->open_device(false);
  return rt;
}

}  // namespace forge::gpu
