// Where a tensor's storage lives and where its ops run: the CPU, or a WebGPU
// device (a hardware GPU through Dawn, or SwiftShader when asked for).
//
// Threads: every function here may be called from several threads at once.
// A WebGPU device is one per process; its runtime serialises the threads that
// use it (one lock around its caches, buffer pool and open command batch), so
// ops from several threads interleave in its one queue.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace forge {

namespace gpu {
class Runtime;
}

class Device {
 public:
  enum class Kind { Cpu, WebGPU };

  // The CPU backend.
  static Device cpu();
  // The process's WebGPU device: a hardware adapter when there is one, else
  // SwiftShader (with a one-line notice on stderr). Throws DeviceError when
  // none can be created or forge was built without WebGPU.
  static Device webgpu();
  // "cpu", "webgpu", or "auto" (a hardware GPU if present, else the CPU).
  static Device from_name(std::string_view name);
  // True when a hardware (non-CPU) WebGPU adapter exists; probes once.
  static bool hardware_gpu_available();
  // The CPU backend's matrix library and the kernels it runs:
  // "openblas (SkylakeX kernels)", or "none (portable loops)".
  static std::string cpu_blas();

  Kind kind() const { return kind_; }
  bool is_cpu() const { return kind_ == Kind::Cpu; }
  bool is_webgpu() const { return kind_ == Kind::WebGPU; }
  // The runtime of a WebGPU device; throws DeviceError on the CPU.
  gpu::Runtime& runtime() const;
  // "cpu" or "webgpu (NVIDIA H200)".
  std::string name() const;

  // Device memory of a WebGPU device's buffer pool (zeros on the CPU, whose
  // tensors use the host heap). Freed tensors' buffers stay in the pool for
  // reuse; buffers not reused for 30 s go back to the driver at the next
  // read back or allocation.
  struct MemoryStats {
    uint64_t in_use = 0;  // bytes of buffers held by tensors (and read backs in flight)
    uint64_t pooled = 0;  // bytes kept for reuse
    uint64_t peak = 0;    // highest in_use + pooled so far
    uint64_t limit = 0;   // set_memory_limit's cap; 0: none
  };
  MemoryStats memory_stats() const;
  // Gives every pooled buffer back to the driver; returns the bytes released.
  uint64_t trim_memory() const;
  // Caps the device memory forge holds (in use + pooled). An allocation past
  // it first trims the pool, then fails with GpuError naming the tensor and
  // the sizes; the device stays usable. 0 lifts the cap. No-op on the CPU.
  void set_memory_limit(uint64_t bytes) const;

  bool operator==(const Device& o) const { return kind_ == o.kind_ && runtime_ == o.runtime_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

  explicit Device(std::shared_ptr<gpu::Runtime> runtime);

 private:
  Device() = default;
  Kind kind_ = Kind::Cpu;
  std::shared_ptr<gpu::Runtime> runtime_;
};

}  // namespace forge
