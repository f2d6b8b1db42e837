// The build's facts (this_build.h), from the definitions tests/CMakeLists.txt
// gives this file alone.
#include "unit/this_build.h"

#include <stdexcept>

#ifdef FORGE_HAVE_WEBGPU
#include "gpu/runtime.h"
#endif

namespace forge::testing {

const char* test_data_dir() { return FORGE_TEST_DATA; }

const char* cli_path() { return FORGE_CLI; }

bool webgpu_built() {
#ifdef FORGE_HAVE_WEBGPU
  return true;
#else
  return false;
#endif
}

bool bench_built() { return FORGE_BENCH_BUILT; }

Device own_webgpu_device() {
#ifdef FORGE_HAVE_WEBGPU
  std::shared_ptr<gpu::Runtime> rt = gpu::create_runtime(gpu::AdapterPreference::Any);
  if (!rt) throw std::runtime_error("no WebGPU adapter (neither a GPU nor SwiftShader)");
  return Device(rt);
#else
  return Device::webgpu();  // throws: built without WebGPU
#endif
}

}  // namespace forge::testing
