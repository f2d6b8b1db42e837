// What differs between the builds of this suite (presets default, asan,
// cpu-only) and between checkouts: where the test data and the forge CLI are,
// whether forge has its WebGPU backend and the CLI its bench commands. Only
// this_build.cpp sees the macros that say so; every other test file
// preprocesses to the same text in every build and every clone, so ccache
// compiles it once for all of them.
#pragma once
#include "forge/device.h"

namespace forge::testing {

const char* test_data_dir();  // tests/fixtures
const char* cli_path();       // the forge CLI built beside this suite
bool webgpu_built();          // forge was built with the WebGPU backend
bool bench_built();           // the CLI has the `forge bench` commands (FORGE_BENCH)

// A WebGPU device of its own (not Device::webgpu()'s shared one), so that its
// buffer pool's figures are one test's; throws where there is none.
Device own_webgpu_device();

}  // namespace forge::testing
