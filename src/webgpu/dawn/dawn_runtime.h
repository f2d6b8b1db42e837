// The native WebGPU runtime: Dawn through webgpu.h.
//
// Threads: every method may be called from several threads. One mutex (mu_)
// guards the device calls, the pipeline and bind group caches and the open
// batch; a wait for the device lets it go between polls, so other threads
// record work meanwhile. The buffer pool has its own lock because buffers
// return to it from whichever thread drops the last reference.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/runtime.h"
#include "gpu/submit_pacer.h"
#include "webgpu/dawn/handle.h"

namespace forge::webgpu {

class DawnRuntime;

// A pooled storage buffer; returns to its runtime's pool when released.
class DawnBuffer final : public gpu::Buffer {
 public:
  DawnBuffer(BufferHandle h, uint64_t size) : handle(std::move(h)), size_(size) {}
  uint64_t size() const override { return size_; }
  BufferHandle handle;

 private:
  uint64_t size_;
};

class DawnRuntime final : public gpu::Runtime, public std::enable_shared_from_this<DawnRuntime> {
 public:
  // Takes ownership of an instance, adapter and device made by create_runtime.
  DawnRuntime(InstanceHandle instance, AdapterHandle adapter, gpu::AdapterInfo info);
  ~DawnRuntime() override;
  // Requests the device with the adapter's limits; throws GpuError on failure.
  void open_device(bool disable_robustness);
  // How long a wait for the device may take before GpuError: $FORGE_GPU_TIMEOUT
  // seconds (default 600). Tests lower it to reach the timeout path.
  double timeout_seconds() const { return timeout_s_; }
  void set_timeout_for_testing(double seconds) { timeout_s_ = seconds; }

  const gpu::AdapterInfo& adapter() const override { return info_; }
  const gpu::Limits& limits() const override { return limits_; }
  std::shared_ptr<gpu::Buffer> allocate(uint64_t bytes) override;
  void upload(const gpu::Buffer& dst, uint64_t offset, const void* src, uint64_t bytes) override;
  std::unique_ptr<gpu::PendingDownload> start_download(const gpu::Buffer& src, uint64_t offset,
                                                      uint64_t bytes) override;
  void copy(const gpu::Buffer& src, uint64_t src_offset, const gpu::Buffer& dst, uint64_t dst_offset,
            uint64_t bytes) override;
  void clear(const gpu::Buffer& dst, uint64_t offset, uint64_t bytes) override;
  void dispatch(const gpu::Dispatch& d) override;
  void flush() override;
  void sync() override;
  bool profiling() const override { return profile_ != nullptr; }
  std::string profile_clock() const override {
    return profile_ ? (profile_->host_clock ? "host clock" : "device timestamps") : "";
  }
  std::vector<gpu::KernelTime> kernel_times() override;
  void reset_kernel_times() override;
  MemoryStats memory_stats() const override;
  uint64_t trim() override;
  void set_memory_limit(uint64_t bytes) override;
  void set_pool_idle_seconds(double seconds) override;
  // Destroys the device as a driver reset would lose it, for tests of the
  // device-lost path: every later call fails with GpuError.
  void lose_device_for_testing();

  // The underlying handles, for tests of the API declarations.
  WGPUAdapter raw_adapter() const { return adapter_.get(); }
  WGPUDevice raw_device() const { return device_.get(); }

  // Called from webgpu.h callbacks.
  void on_error(WGPUErrorType type, const std::string& message);
  void on_device_lost(const std::string& message);

 private:
  friend class DawnPendingDownload;
  // The second half of a read back: waits for the staging buffer's mapping,
  // copies the bytes to dst (when not null) and returns the buffer to the pool.
  struct MapResult {  // what a buffer-mapping callback reports (callback_state.h)
    bool done = false;
    WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Error;
    std::string message;
  };
  void finish_download(BufferHandle staging, uint64_t size, uint64_t bytes, uint64_t submit, const MapResult& map,
                       void* dst);
  // What AdapterInfo::subgroup_size says, by one probe dispatch
  // (subgroup_probe.cpp); 0 where the kernels must not sum by subgroup.
  uint32_t probe_subgroup_size();
  using Lock = std::unique_lock<std::mutex>;
  // The bodies of the public calls, with mu_ held.
  void flush_locked(Lock& lock);
  std::unique_ptr<gpu::PendingDownload> start_download_locked(Lock& lock, const gpu::Buffer& src, uint64_t offset,
                                                             uint64_t bytes);

  struct Pipeline {
    BindGroupLayoutHandle layout;  // explicit: binding 0 (parameters) takes a dynamic offset
    PipelineLayoutHandle pipeline_layout;
    ComputePipelineHandle pipeline;
  };
  static constexpr size_t kMaxConstants = 16;
  // A kernel and the values of its override constants.
  struct PipelineKey {
    const gpu::Kernel* kernel = nullptr;
    uint32_t count = 0;
    std::array<double, kMaxConstants> values{};
    bool operator==(const PipelineKey& o) const { return kernel == o.kernel && count == o.count && values == o.values; }
  };
  struct PipelineKeyHash {
    size_t operator()(const PipelineKey& k) const;
  };
  // A bind group's layout and buffer ranges. Pooled buffers live as long as
  // the runtime, so a bind group made once serves every later dispatch that
  // binds the same ranges (a decode loop binds the same ones every token).
  static constexpr size_t kMaxBindings = 10;
  struct BindKey {
    struct Range {
      WGPUBuffer buffer;
      uint64_t offset, size;
      bool operator==(const Range& o) const { return buffer == o.buffer && offset == o.offset && size == o.size; }
    };
    WGPUBindGroupLayout layout = nullptr;
    uint32_t count = 0;
    std::array<Range, kMaxBindings> ranges{};
    bool operator==(const BindKey& o) const;
  };
  struct BindKeyHash {
    size_t operator()(const BindKey& k) const;
  };

  const Pipeline& pipeline(Lock& lock, const gpu::Dispatch& d);
  struct ScopeResult {
    WGPUErrorType type = WGPUErrorType_NoError;
    std::string message;
  };
  // Pops the innermost error scope and waits for its verdict.
  ScopeResult pop_error_scope(Lock& lock, const char* what);
  BufferHandle create_buffer(Lock& lock, uint64_t bytes, WGPUBufferUsage usage, const char* what);
  // Pooled buffers older than `older_than` (all with the default), released
  // with mu_ held; the bind groups that named them go too. Returns the bytes.
  uint64_t release_pooled(Lock& lock, std::chrono::steady_clock::time_point older_than =
                                          std::chrono::steady_clock::time_point::max());
  void release_idle(Lock& lock);
  // Makes room for `size` more bytes under the memory cap (trimming the pool
  // if need be); GpuError when even then they would pass it.
  void reserve(Lock& lock, uint64_t size);
  WGPUCommandEncoder encoder();
  void end_pass();
  // Processes events until done() or the device is lost; throws GpuError
  // after timeout_s_. Holds `lock` while it polls and lets it go in between.
  void wait_until(Lock& lock, const std::function<bool()>& done, const char* what);
  void raise_pending_errors();
  void check_alive() const;
  static uint64_t bucket(uint64_t bytes);

  // Kernel profiling (dawn_profile.cpp): each dispatch in a pass of its own
  // whose beginning and end write timestamps; a batch's are resolved before
  // it is finished and read back after its submit. Without timestamp queries
  // (host_clock), each dispatch is submitted alone and waited for, timed by
  // the host's clock less an empty submit's round trip.
  struct Profile {
    bool host_clock = false;
    double empty_ms = 0;      // host clock: the round trip of an empty submit
    BufferHandle fence, staging;  // host clock: what a wait copies and maps
    QuerySetHandle queries;   // 2 * kProfileSlots timestamps
    BufferHandle resolved;    // the batch's timestamps, u64 ns (QueryResolve | CopySrc)
    std::vector<const gpu::Kernel*> batch;  // the timed dispatches of the open batch
    std::vector<const char*> ops;           // and their ops
    std::vector<std::array<uint32_t, 3>> grids;  // and their grids
    bool by_grid = false;     // $FORGE_PROFILE_GRID=1: a row per kernel and grid
    std::vector<gpu::KernelTime> totals;
  };
  static bool wants_profile();     // --profile, or $FORGE_PROFILE set and not "0"
  static bool wants_host_clock();  // $FORGE_PROFILE=host: the host clock even where timestamps exist
  static constexpr uint32_t kProfileSlots = 2048;  // timed dispatches per batch
  void start_profiling(Lock& lock, bool timestamps);
  void begin_profiled_pass(const gpu::Dispatch& d);
  void resolve_profile();
  void collect_profile(Lock& lock);
  void add_kernel_time(const char* op, const gpu::Kernel& kernel, const std::array<uint32_t, 3>& grid, double ms);
  // Host clock: submits and waits for what is recorded so far, and returns
  // the time the next dispatch starts from; end submits it, waits, adds it.
  std::chrono::steady_clock::time_point begin_host_timed(Lock& lock);
  void end_host_timed(Lock& lock, const gpu::Dispatch& d, std::chrono::steady_clock::time_point started);
  void drain(Lock& lock);  // submits the open batch and waits for the queue
  void copy_and_map(Lock& lock, WGPUBuffer src, WGPUBuffer staging, uint64_t bytes, const char* what);
  std::unique_ptr<Profile> profile_;

  InstanceHandle instance_;
  AdapterHandle adapter_;
  DeviceHandle device_;
  QueueHandle queue_;
  gpu::AdapterInfo info_;
  gpu::Limits limits_;
  uint32_t uniform_alignment_ = 256;
  double timeout_s_;

  std::mutex mu_;  // everything below but the error state and the buffer pool

  std::mutex error_mu_;
  std::vector<std::string> errors_;
  std::atomic<bool> lost_{false};
  std::string lost_message_;
  std::string current_op_;  // the op being recorded, for error messages

  struct Pooled {
    BufferHandle handle;
    std::chrono::steady_clock::time_point since;  // when it was released
  };
  mutable std::mutex pool_mu_;
  std::unordered_map<uint64_t, std::vector<Pooled>> free_buffers_;  // by bucket size
  std::unordered_map<uint64_t, std::vector<Pooled>> free_staging_;
  MemoryStats memory_;  // under pool_mu_ (staging buffers count as pooled or in use too)
  double pool_idle_s_ = 30.0;
  std::chrono::steady_clock::time_point last_idle_check_{};

  std::unordered_map<PipelineKey, Pipeline, PipelineKeyHash> pipelines_;
  std::unordered_map<BindKey, BindGroupHandle, BindKeyHash> bind_groups_;

  // The open batch.
  CommandEncoderHandle encoder_;
  ComputePassHandle pass_;
  std::vector<const char*> batch_ops_;  // op names (static strings) of the open batch
  std::vector<std::byte> uniform_host_;  // parameter blocks of this batch
  BufferHandle uniform_buffer_;
  uint64_t uniform_capacity_ = 0;
  gpu::SubmitPacer pacer_;  // when the open batch goes to the device early
  std::unique_ptr<DawnBuffer> fence_;  // a word read back by sync() (not pooled: no owner cycle)
};

}  // namespace forge::webgpu
