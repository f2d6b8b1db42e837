// The GPU runtime interface that ops code talks to. It knows nothing of a
// particular WebGPU implementation: the native one (Dawn, src/webgpu/) and a
// browser one (navigator.gpu) sit behind it.
//
// Model: storage buffers, WGSL kernels dispatched with a small parameter block
// (binding 0, a uniform) and storage bindings (1, 2, ... in the order given),
// recorded into an open batch that is submitted when a result is read back, a
// batch fills, or flush() is called. Errors raised by the implementation
// asynchronously surface as forge::GpuError at the next sync point.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace forge::gpu {

// What the adapter offers, as raised on the device.
struct Limits {
  uint64_t max_storage_binding = 0;      // bytes one storage binding may span
  uint64_t max_buffer = 0;               // bytes of one buffer
  uint32_t storage_offset_alignment = 256;  // binding offsets must be multiples
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_size_x = 0, max_workgroup_size_y = 0, max_workgroup_size_z = 0;
  uint32_t max_workgroups_per_dim = 0;
  uint32_t max_workgroup_storage = 0;    // bytes of var<workgroup>
  uint32_t max_storage_buffers_per_stage = 0;
  uint32_t subgroup_min = 0, subgroup_max = 0;
};

struct AdapterInfo {
  std::string name;         // "NVIDIA H200", "SwiftShader Device (Subzero)"
  std::string vendor;
  std::string backend;      // "vulkan", "metal", "d3d12", ...
  std::string adapter_type; // "discrete-gpu", "integrated-gpu", "cpu", "unknown"
  std::string driver;
  bool shader_f16 = false;
  bool subgroups = false;
  bool timestamp_query = false;
  // The subgroup size the kernels' subgroup sums are built for, 0 where they
  // reduce through workgroup memory only. Nonzero only where the device has
  // the subgroups feature, the adapter reports one size for every pipeline,
  // and a probe dispatch found each subgroup of a 256-invocation workgroup
  // to be a run of consecutive local invocation indices (WGSL leaves the
  // mapping to the implementation; those sums rely on it). FORGE_SUBGROUPS=0
  // turns them off.
  uint32_t subgroup_size = 0;
};

// A device buffer. Owned through std::shared_ptr; the runtime recycles it when
// the last owner lets go. Its size is at least what was asked for.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual uint64_t size() const = 0;
};

// One storage binding of a dispatch: a byte range of a buffer.
struct Arg {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;  // bytes; a multiple of Limits::storage_offset_alignment
  uint64_t size = 0;    // bytes; 0 means to the end of the buffer
};

// A WGSL kernel: source text embedded at build time and its entry point.
// Kernels are compared by address: define each one once, as a constant.
struct Kernel {
  std::string_view name;
  std::string_view source;
  std::string_view entry = "main";
};

// A WGSL `override` constant for pipeline specialisation.
struct Constant {
  const char* name;
  double value;
};

struct Dispatch {
  const Kernel* kernel = nullptr;
  std::span<const Constant> constants;
  const void* params = nullptr;   // contents of the uniform at binding 0 (none if size 0)
  size_t params_size = 0;
  std::span<const Arg> args;      // storage bindings 1..n
  std::array<uint32_t, 3> groups{1, 1, 1};
  const char* op = "";            // the op name, for error messages
};

// A read back in flight (Runtime::start_download). finish() waits for the
// device and copies the bytes out; destroying it unfinished waits as well.
// Device time spent in one kernel, summed over its dispatches (profiling).
struct KernelTime {
  std::string op;      // the op that dispatched it
  std::string kernel;  // the WGSL kernel's name
  std::string grid;    // "XxYxZ" workgroups when split by grid ($FORGE_PROFILE_GRID=1), else empty
  uint64_t dispatches = 0;
  double ms = 0;
};

class PendingDownload {
 public:
  virtual ~PendingDownload() = default;
  virtual void finish(void* dst) = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual const AdapterInfo& adapter() const = 0;
  virtual const Limits& limits() const = 0;

  // A buffer of at least `bytes` bytes (contents undefined), usable as storage
  // and as a copy source and destination.
  virtual std::shared_ptr<Buffer> allocate(uint64_t bytes) = 0;
  // Host -> device. `bytes` and `offset` multiples of 4.
  virtual void upload(const Buffer& dst, uint64_t offset, const void* src, uint64_t bytes) = 0;
  // Device -> host; a sync point: waits for the recorded work.
  void download(const Buffer& src, uint64_t offset, void* dst, uint64_t bytes) {
    start_download(src, offset, bytes)->finish(dst);
  }
  // Device -> host without waiting: submits the recorded work with a copy of
  // the bytes. More work can be recorded and submitted before finish(), so
  // the device runs it while the host waits for the read.
  virtual std::unique_ptr<PendingDownload> start_download(const Buffer& src, uint64_t offset, uint64_t bytes) = 0;
  // Recorded device-side copy; offsets and size multiples of 4.
  virtual void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
                    uint64_t bytes) = 0;
  // Recorded zero fill; offset and size multiples of 4.
  virtual void clear(const Buffer& dst, uint64_t offset, uint64_t bytes) = 0;
  virtual void dispatch(const Dispatch& d) = 0;
  // Submits the open batch without waiting.
  virtual void flush() = 0;
  // Submits and waits for all work; raises pending errors.
  virtual void sync() = 0;

  // Kernel profiling: true when every dispatch is timed (see
  // request_profiling). The times of submitted work, summed by op and kernel,
  // longest first; reset clears them. profile_clock says how they were taken:
  // "device timestamps", or "host clock" on a device without timestamp
  // queries, where each dispatch is submitted and waited for alone and an
  // empty submit's round trip is subtracted.
  virtual bool profiling() const { return false; }
  virtual std::string profile_clock() const { return ""; }
  virtual std::vector<KernelTime> kernel_times() { return {}; }
  virtual void reset_kernel_times() {}
  // Device memory held through allocate(): live buffers and the pool of
  // released ones kept for reuse.
  struct MemoryStats {
    uint64_t in_use = 0;  // bytes of buffers with an owner
    uint64_t pooled = 0;  // bytes of released buffers kept for reuse
    uint64_t peak = 0;    // highest in_use + pooled so far
    uint64_t limit = 0;   // set_memory_limit's cap; 0: none
  };
  virtual MemoryStats memory_stats() const { return {}; }
  // Gives every pooled buffer back to the driver; returns the bytes released.
  virtual uint64_t trim() { return 0; }
  // Caps in_use + pooled: an allocation beyond it first trims the pool, then
  // fails with GpuError naming the sizes. 0 lifts the cap.
  virtual void set_memory_limit(uint64_t bytes) {}
  // Pooled buffers not reused for this long are given back at the next
  // submit (default 30 s), so memory a burst of work used returns when idle.
  virtual void set_pool_idle_seconds(double seconds) {}

  // The storage binding limit ops must respect. Tests lower it to exercise
  // the paths that split work across bindings without allocating gigabytes.
  uint64_t binding_limit() const { return binding_limit_override_ ? binding_limit_override_ : limits().max_storage_binding; }
  void set_binding_limit_for_testing(uint64_t bytes) { binding_limit_override_ = bytes; }
  // Likewise the workgroup storage kernels may size their tiles to, so that
  // tests reach the tilings of smaller devices.
  uint32_t workgroup_storage() const {
    return workgroup_storage_override_ ? workgroup_storage_override_ : limits().max_workgroup_storage;
  }
  void set_workgroup_storage_for_testing(uint32_t bytes) { workgroup_storage_override_ = bytes; }
  // Whether the adapter is a CPU driver (SwiftShader; a browser's fallback
  // adapter), which runs each SIMD group of a workgroup that has barriers as
  // a coroutine: ops pick barrier-free kernels there where a GPU keeps its
  // cooperative ones. $FORGE_CPU_DRIVER=0 or 1 overrides the adapter type,
  // and tests override both to cover either path on one adapter.
  bool cpu_driver() const {
    if (cpu_driver_override_ >= 0) return cpu_driver_override_ == 1;
    const char* env = std::getenv("FORGE_CPU_DRIVER");
    if (env && *env) return std::string_view(env) != "0";
    return adapter().adapter_type == "cpu";
  }
  // 1 or 0 forces cpu_driver(); -1 restores the adapter's answer.
  void set_cpu_driver_for_testing(int forced) { cpu_driver_override_ = forced; }
  // The subgroup size kernels sum by (AdapterInfo::subgroup_size), 0 for
  // workgroup memory only; tests turn the subgroup form off to cover both.
  uint32_t subgroup_size() const { return tree_sums_forced_ ? 0 : adapter().subgroup_size; }
  void set_tree_sums_for_testing(bool forced) { tree_sums_forced_ = forced; }

 private:
  uint64_t binding_limit_override_ = 0;
  uint32_t workgroup_storage_override_ = 0;
  int cpu_driver_override_ = -1;
  bool tree_sums_forced_ = false;
};

// How to choose an adapter.
enum class AdapterPreference {
  Hardware,    // a hardware GPU, or none
  Any,         // a hardware GPU, else a software one (SwiftShader)
  Software,    // SwiftShader only
};

// Kernel profiling for the runtimes created after this call (as
// $FORGE_PROFILE=1 asks too): `--profile` on the command line sets it.
inline std::atomic<bool>& profiling_flag() {
  static std::atomic<bool> requested{false};
  return requested;
}
inline void request_profiling() { profiling_flag() = true; }
inline bool profiling_requested() {
  const char* env = std::getenv("FORGE_PROFILE");
  return profiling_flag() || (env && *env && std::string_view(env) != "0");
}

// Creates a runtime on the chosen adapter; nullptr when none is available.
// `notice` receives a one-line description of a software fallback.
std::shared_ptr<Runtime> create_runtime(AdapterPreference pref, std::string* notice = nullptr);

}  // namespace forge::gpu
