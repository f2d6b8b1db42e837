// Kernel profiling by timestamp queries. Each dispatch runs in a compute pass
// of its own whose beginning and end write a timestamp, so the figures include
// the pass boundaries' barriers and a profiled run is somewhat slower than a
// plain one; what they are for is the split of device time between kernels.
// A batch's timestamps are resolved into a buffer before the batch is
// finished, and read back (waiting for the batch) right after its submit.
//
// A device without timestamp queries (SwiftShader, many browsers' adapters)
// (or with $FORGE_PROFILE=host) is profiled by the host's clock: each dispatch is submitted alone after the
// queue has drained and waited for, and the round trip of an empty submit,
// measured when profiling starts, is taken off. Much slower than a plain run,
// and coarser, but it ranks the kernels where nothing else can.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "forge/error.h"
#include "webgpu/dawn/callback_state.h"
#include "webgpu/dawn/dawn_runtime.h"

namespace forge::webgpu {

bool DawnRuntime::wants_profile() { return gpu::profiling_requested(); }

bool DawnRuntime::wants_host_clock() {
  const char* env = std::getenv("FORGE_PROFILE");
  return env && std::strcmp(env, "host") == 0;
}

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

void DawnRuntime::start_profiling(Lock& lock, bool timestamps) {
  auto p = std::make_unique<Profile>();
  const char* by_grid = std::getenv("FORGE_PROFILE_GRID");
  p->by_grid = by_grid && *by_grid && std::strcmp(by_grid, "0") != 0;
  if (!timestamps) {
    p->host_clock = true;
    p->fence = create_buffer(lock, 16, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc, "profile fence");
    p->staging = create_buffer(lock, 16, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "profile fence readback");
    profile_ = std::move(p);
    // The round trip of an empty submit, the least of a few.
    double best = 1e9;
    for (int i = 0; i < 5; ++i) {
      const Clock::time_point t0 = Clock::now();
      drain(lock);
      best = std::min(best, ms_between(t0, Clock::now()));
    }
    profile_->empty_ms = best;
    return;
  }
  WGPUQuerySetDescriptor qd{};
  qd.label = view("forge profile");
  qd.type = WGPUQueryType_Timestamp;
  qd.count = 2 * kProfileSlots;
  p->queries = QuerySetHandle(wgpuDeviceCreateQuerySet(device_.get(), &qd));
  p->resolved = create_buffer(lock, 2 * kProfileSlots * sizeof(uint64_t),
                              WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, "profile timestamps");
  profile_ = std::move(p);
}

void DawnRuntime::begin_profiled_pass(const gpu::Dispatch& d) {
  end_pass();
  const uint32_t i = uint32_t(profile_->batch.size());
  WGPUPassTimestampWrites tw{};
  tw.querySet = profile_->queries.get();
  tw.beginningOfPassWriteIndex = 2 * i;
  tw.endOfPassWriteIndex = 2 * i + 1;
  WGPUComputePassDescriptor cp{};
  cp.timestampWrites = &tw;
  pass_ = ComputePassHandle(wgpuCommandEncoderBeginComputePass(encoder(), &cp));
  profile_->batch.push_back(d.kernel);
  profile_->ops.push_back(d.op);
  profile_->grids.push_back(d.groups);
}

void DawnRuntime::resolve_profile() {
  const uint32_t n = uint32_t(profile_->batch.size());
  if (n == 0) return;
  wgpuCommandEncoderResolveQuerySet(encoder(), profile_->queries.get(), 0, 2 * n, profile_->resolved.get(), 0);
}

void DawnRuntime::collect_profile(Lock& lock) {
  const size_t n = profile_->batch.size();
  if (n == 0) return;
  std::vector<const gpu::Kernel*> kernels;
  std::vector<const char*> ops;
  std::vector<std::array<uint32_t, 3>> grids;
  kernels.swap(profile_->batch);
  ops.swap(profile_->ops);
  grids.swap(profile_->grids);
  // The resolved timestamps, read back at once (a profiled run waits for
  // each batch; the device time of each kernel is what it measures).
  const uint64_t bytes = 2 * n * sizeof(uint64_t);
  BufferHandle staging = create_buffer(lock, bytes, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "profile readback");
  copy_and_map(lock, profile_->resolved.get(), staging.get(), bytes, "the profile's timestamps");
  std::vector<uint64_t> t(2 * n);
  std::memcpy(t.data(), wgpuBufferGetConstMappedRange(staging.get(), 0, size_t(bytes)), bytes);
  wgpuBufferUnmap(staging.get());
  for (size_t i = 0; i < n; ++i)
    add_kernel_time(ops[i], *kernels[i], grids[i], t[2 * i + 1] > t[2 * i] ? double(t[2 * i + 1] - t[2 * i]) * 1e-6 : 0.0);
}

void DawnRuntime::add_kernel_time(const char* op, const gpu::Kernel& kernel, const std::array<uint32_t, 3>& grid,
                                  double ms) {
  const std::string g = profile_->by_grid ? std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" +
                                                std::to_string(grid[2])
                                          : std::string();
  auto it = std::find_if(profile_->totals.begin(), profile_->totals.end(), [&](const gpu::KernelTime& k) {
    return k.op == op && k.kernel == kernel.name && k.grid == g;
  });
  if (it == profile_->totals.end()) {
    profile_->totals.push_back({op, std::string(kernel.name), g, 0, 0});
    it = profile_->totals.end() - 1;
  }
  it->dispatches += 1;
  it->ms += ms;
}

void DawnRuntime::drain(Lock& lock) {
  flush_locked(lock);
  copy_and_map(lock, profile_->fence.get(), profile_->staging.get(), 16, "a profiled dispatch");
  wgpuBufferUnmap(profile_->staging.get());
}

// Submits a copy of `bytes` from src to the mappable staging and waits until
// the staging is mapped for reading (so everything submitted before is done).
void DawnRuntime::copy_and_map(Lock& lock, WGPUBuffer src, WGPUBuffer staging, uint64_t bytes, const char* what) {
  WGPUCommandEncoderDescriptor ed{};
  CommandEncoderHandle enc(wgpuDeviceCreateCommandEncoder(device_.get(), &ed));
  wgpuCommandEncoderCopyBufferToBuffer(enc.get(), src, 0, staging, 0, bytes);
  CommandBufferHandle cmd(wgpuCommandEncoderFinish(enc.get(), nullptr));
  WGPUCommandBuffer buffers[] = {cmd.get()};
  wgpuQueueSubmit(queue_.get(), 1, buffers);
  auto map = std::make_shared<MapResult>();
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView msg, void* m, void*) {
    auto state = take_callback_ref<MapResult>(m);
    state->done = true;
    state->status = status;
    state->message = to_string(msg);
  };
  cb.userdata1 = callback_ref(map);
  wgpuBufferMapAsync(staging, WGPUMapMode_Read, 0, size_t(bytes), cb);
  wait_until(lock, [&] { return map->done; }, what);
  if (map->status != WGPUMapAsyncStatus_Success)
    throw GpuError(std::string("[webgpu] waiting for ") + what + " failed: " + map->message);
}

Clock::time_point DawnRuntime::begin_host_timed(Lock& lock) {
  drain(lock);
  return Clock::now();
}

void DawnRuntime::end_host_timed(Lock& lock, const gpu::Dispatch& d, Clock::time_point started) {
  drain(lock);
  add_kernel_time(d.op, *d.kernel, d.groups, std::max(0.0, ms_between(started, Clock::now()) - profile_->empty_ms));
}

std::vector<gpu::KernelTime> DawnRuntime::kernel_times() {
  Lock lock(mu_);
  if (!profile_) return {};
  std::vector<gpu::KernelTime> out = profile_->totals;
  std::sort(out.begin(), out.end(), [](const gpu::KernelTime& a, const gpu::KernelTime& b) { return a.ms > b.ms; });
  return out;
}

void DawnRuntime::reset_kernel_times() {
  Lock lock(mu_);
  if (profile_) profile_->totals.clear();
}

}  // namespace forge::webgpu
