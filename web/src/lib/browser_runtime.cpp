// gpu::Runtime over the page's navigator.gpu: the browser build's WebGPU
// device, so the ops' host code and WGSL kernels run unchanged in a tab.
//
// The WebGPU objects live on the JavaScript side (browser_gpu.h: small EM_JS
// functions over integer ids); this file keeps what the Dawn runtime keeps
// (src/webgpu/dawn/dawn_runtime.cpp): the buffer pool by size bucket, the
// pipeline cache by (kernel, override constants), bind groups by buffer
// ranges, one open command encoder per batch with a parameter arena bound at
// dynamic offsets. Waits (buffer mapping, error scopes) await the page's
// promises through Asyncify, so the C++ callers stay synchronous. The page
// is single-threaded: no locks.
#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "browser_gpu.h"
#include "forge/error.h"
#include "gpu/runtime.h"
#include "gpu/submit_pacer.h"
#include "webgpu/dawn/wgsl_bindings.h"

namespace forge::gpu {

namespace {

using webgpu::WgslBinding;

constexpr uint64_t kUniformArenaBytes = 1024 * 1024;  // parameter blocks of one batch

class BrowserRuntime;

class BrowserBuffer final : public Buffer {
 public:
  BrowserBuffer(int id, uint64_t size) : id(id), size_(size) {}
  uint64_t size() const override { return size_; }
  int id;

 private:
  uint64_t size_;
};

int id_of(const Buffer& b) { return static_cast<const BrowserBuffer&>(b).id; }

// Sizes round up as the Dawn runtime's pool does: 256 bytes below 64 KiB,
// then a quarter of the power of two.
uint64_t bucket(uint64_t bytes) {
  if (bytes <= 65536) return std::max<uint64_t>(256, (bytes + 255) / 256 * 256);
  uint64_t p = 1;
  while (p < bytes) p <<= 1;
  const uint64_t quarter = p / 8;
  return (bytes + quarter - 1) / quarter * quarter;
}

class BrowserRuntime final : public Runtime, public std::enable_shared_from_this<BrowserRuntime> {
 public:
  BrowserRuntime(AdapterInfo info, Limits limits, uint32_t uniform_alignment)
      : info_(std::move(info)), limits_(limits), uniform_alignment_(uniform_alignment) {
    uniform_buffer_ = js::gpu_create_buffer(double(kUniformArenaBytes), js::kUniformUsage);
  }

  const AdapterInfo& adapter() const override { return info_; }
  const Limits& limits() const override { return limits_; }

  std::shared_ptr<Buffer> allocate(uint64_t bytes) override {
    check_alive();
    if (limits_.max_buffer && bytes > limits_.max_buffer)
      throw GpuError("[webgpu] a buffer of " + std::to_string(bytes) +
                     " bytes exceeds the device's maximum buffer size of " + std::to_string(limits_.max_buffer) +
                     " bytes");
    const uint64_t size = limits_.max_buffer ? std::min(bucket(bytes), limits_.max_buffer / 4 * 4) : bucket(bytes);
    int id = 0;
    auto& list = free_[size];
    if (!list.empty()) {
      id = list.back();
      list.pop_back();
      memory_.pooled -= size;
    } else {
      if (memory_.limit && memory_.in_use + memory_.pooled + size > memory_.limit) trim();
      if (memory_.limit && memory_.in_use + size > memory_.limit)
        throw GpuError("[webgpu] allocating " + std::to_string(size) + " bytes would pass the memory limit of " +
                       std::to_string(memory_.limit) + " bytes (" + std::to_string(memory_.in_use) + " in use)");
      id = js::gpu_create_buffer(double(size), js::kStorageUsage);
      if (id < 0) throw GpuError("[webgpu] out of memory allocating " + std::to_string(size) + " bytes");
    }
    memory_.in_use += size;
    memory_.peak = std::max(memory_.peak, memory_.in_use + memory_.pooled);
    // The pool outlives nothing it cannot reach: a released buffer goes back
    // while the runtime lives, and is destroyed otherwise.
    std::weak_ptr<BrowserRuntime> self = shared_from_this();
    return std::shared_ptr<Buffer>(new BrowserBuffer(id, size), [self](Buffer* b) {
      auto* bb = static_cast<BrowserBuffer*>(b);
      if (auto rt = self.lock()) rt->release(bb->id, bb->size());
      else js::gpu_destroy_buffer(bb->id);
      delete bb;
    });
  }

  void upload(const Buffer& dst, uint64_t offset, const void* src, uint64_t bytes) override {
    check_alive();
    // queue writes run before the open batch: submit it first (as natively).
    if (open_) flush();
    js::gpu_write_buffer(id_of(dst), double(offset), src, double(bytes));
  }

  std::unique_ptr<PendingDownload> start_download(const Buffer& src, uint64_t offset, uint64_t bytes) override;

  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset,
            uint64_t bytes) override {
    check_alive();
    open_ = true;
    js::gpu_copy(id_of(src), double(src_offset), id_of(dst), double(dst_offset), double(bytes));
  }

  void clear(const Buffer& dst, uint64_t offset, uint64_t bytes) override {
    check_alive();
    open_ = true;
    js::gpu_clear(id_of(dst), double(offset), double(bytes));
  }

  void dispatch(const Dispatch& d) override {
    check_alive();
    const int pipe = pipeline(d);
    if (d.args.size() + 1 > kMaxBindings)
      throw GpuError(std::string("[") + d.op + "] more than " + std::to_string(kMaxBindings - 1) +
                     " storage bindings");
    uint32_t slot = 0;
    if (d.params_size) {
      uint64_t aligned = (uniform_host_.size() + uniform_alignment_ - 1) / uniform_alignment_ * uniform_alignment_;
      if (aligned + d.params_size > kUniformArenaBytes) {
        flush();
        aligned = 0;
      }
      slot = uint32_t(aligned);
      uniform_host_.resize(slot + d.params_size);
      std::memcpy(uniform_host_.data() + slot, d.params, d.params_size);
    }
    BindKey key;
    key.pipeline = pipe;
    if (d.params_size) key.ranges[key.count++] = {0, double(uniform_buffer_), 0, double((d.params_size + 15) / 16 * 16)};
    for (size_t i = 0; i < d.args.size(); ++i) {
      const Arg& a = d.args[i];
      const uint64_t size = a.size ? (a.size + 3) / 4 * 4 : a.buffer->size() - a.offset;
      if (size > binding_limit())
        throw GpuError(std::string("[") + d.op + "] binding " + std::to_string(i + 1) + " spans " +
                       std::to_string(size) + " bytes, over the device's storage binding limit of " +
                       std::to_string(binding_limit()));
      key.ranges[key.count++] = {double(i + 1), double(id_of(*a.buffer)), double(a.offset), double(size)};
    }
    auto found = bind_groups_.find(key);
    if (found == bind_groups_.end()) {
      if (bind_groups_.size() >= 16384) {
        for (auto& [k, id] : bind_groups_) js::gpu_release_bind_group(id);
        bind_groups_.clear();
      }
      const int bg = js::gpu_bind_group(pipe, reinterpret_cast<const double*>(key.ranges.data()), int(key.count));
      found = bind_groups_.emplace(key, bg).first;
    }
    open_ = true;
    js::gpu_dispatch(pipe, found->second, d.params_size ? int(slot) : -1, d.groups[0], d.groups[1], d.groups[2]);
    if (pacer_.submit_now(++dispatches_)) flush();
  }

  void flush() override {
    check_alive();
    if (!open_) return;
    if (!uniform_host_.empty())
      js::gpu_write_buffer(uniform_buffer_, 0, uniform_host_.data(), double((uniform_host_.size() + 3) / 4 * 4));
    js::gpu_submit();
    pacer_.submitted();
    uniform_host_.clear();
    open_ = false;
    dispatches_ = 0;
  }

  void sync() override {
    flush();
    js::gpu_wait_idle();
    pacer_.waited_for(pacer_.submits());
    raise_pending_errors();
  }

  // A read back carried by submit `number` has finished.
  void waited_for(uint64_t number) { pacer_.waited_for(number); }
  uint64_t submits() const { return pacer_.submits(); }

  MemoryStats memory_stats() const override { return memory_; }

  uint64_t trim() override {
    uint64_t released = 0;
    for (auto& [size, ids] : free_) {
      for (int id : ids) {
        // Bind groups naming the buffer go with it.
        for (auto it = bind_groups_.begin(); it != bind_groups_.end();) {
          bool names = false;
          for (uint32_t i = 0; i < it->first.count; ++i) names = names || it->first.ranges[i].buffer == double(id);
          if (names) {
            js::gpu_release_bind_group(it->second);
            it = bind_groups_.erase(it);
          } else {
            ++it;
          }
        }
        js::gpu_destroy_buffer(id);
        released += size;
      }
      ids.clear();
    }
    memory_.pooled -= released;
    return released;
  }

  void set_memory_limit(uint64_t bytes) override { memory_.limit = bytes; }

  void release(int id, uint64_t size) {
    memory_.in_use -= size;
    memory_.pooled += size;
    free_[size].push_back(id);
  }

  void check_alive() const {
    if (const std::string lost = js::gpu_lost(); !lost.empty()) throw GpuError("[webgpu] the device was lost: " + lost);
  }

  void raise_pending_errors() {
    const std::string errors = js::gpu_take_errors();
    if (!errors.empty()) throw GpuError("[webgpu] " + errors);
  }

 private:
  static constexpr size_t kMaxBindings = 10;
  static constexpr size_t kMaxConstants = 16;

  struct PipelineKey {
    const Kernel* kernel = nullptr;
    uint32_t count = 0;
    std::array<double, kMaxConstants> values{};
    bool operator==(const PipelineKey& o) const { return kernel == o.kernel && count == o.count && values == o.values; }
  };
  struct PipelineKeyHash {
    size_t operator()(const PipelineKey& k) const {
      size_t h = std::hash<const void*>()(k.kernel);
      for (uint32_t i = 0; i < k.count; ++i) h = h * 31 + std::hash<double>()(k.values[i]);
      return h;
    }
  };
  // A bind group's pipeline (its layout) and buffer ranges; doubles, as the
  // JS side reads them from the heap as one Float64Array.
  struct BindKey {
    struct Range {
      double binding;
      double buffer;
      double offset, size;
      bool operator==(const Range& o) const = default;
    };
    int pipeline = 0;
    uint32_t count = 0;
    std::array<Range, kMaxBindings> ranges{};
    bool operator==(const BindKey& o) const {
      if (pipeline != o.pipeline || count != o.count) return false;
      for (uint32_t i = 0; i < count; ++i)
        if (!(ranges[i] == o.ranges[i])) return false;
      return true;
    }
  };
  struct BindKeyHash {
    size_t operator()(const BindKey& k) const {
      size_t h = std::hash<int>()(k.pipeline);
      for (uint32_t i = 0; i < k.count; ++i) {
        h = h * 1000003u ^ std::hash<double>()(k.ranges[i].buffer);
        h = h * 1000003u ^ std::hash<double>()(k.ranges[i].offset);
        h = h * 1000003u ^ std::hash<double>()(k.ranges[i].size);
      }
      return h;
    }
  };

  int pipeline(const Dispatch& d) {
    if (d.constants.size() > kMaxConstants)
      throw GpuError(std::string("[") + d.op + "] kernel '" + std::string(d.kernel->name) + "' has more than " +
                     std::to_string(kMaxConstants) + " override constants");
    PipelineKey key;
    key.kernel = d.kernel;
    for (const auto& c : d.constants) key.values[key.count++] = c.value;
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;

    // An explicit layout from the kernel's declarations: the parameter
    // uniform takes a dynamic offset, as natively.
    nlohmann::json layout = nlohmann::json::array();
    for (const WgslBinding& b : webgpu::wgsl_bindings(d.kernel->source, d.kernel->name)) {
      const char* kind = b.kind == WgslBinding::Kind::Uniform           ? "uniform"
                         : b.kind == WgslBinding::Kind::ReadOnlyStorage ? "read-only-storage"
                                                                        : "storage";
      layout.push_back({{"binding", b.binding}, {"type", kind}});
    }
    nlohmann::json constants = nlohmann::json::object();
    for (const auto& c : d.constants) constants[c.name] = c.value;
    const std::string source(d.kernel->source), entry(d.kernel->entry), name(d.kernel->name);
    const std::string spec = nlohmann::json{{"layout", layout}, {"constants", constants}}.dump();
    const js::Created made = js::gpu_create_pipeline(source, entry, name, spec);
    if (made.id < 0)
      throw GpuError("[" + std::string(d.op) + "] kernel '" + name + "' failed to compile: " + made.error);
    return pipelines_.emplace(key, made.id).first->second;
  }

  AdapterInfo info_;
  Limits limits_;
  uint32_t uniform_alignment_;
  int uniform_buffer_ = 0;
  bool open_ = false;  // work recorded since the last submit
  size_t dispatches_ = 0;  // dispatches in the open batch
  SubmitPacer pacer_;      // when the open batch goes to the device early
  std::vector<std::byte> uniform_host_;
  std::unordered_map<uint64_t, std::vector<int>> free_;  // pooled buffer ids by bucket size
  MemoryStats memory_;
  std::unordered_map<PipelineKey, int, PipelineKeyHash> pipelines_;
  std::unordered_map<BindKey, int, BindKeyHash> bind_groups_;
};

// A staging buffer whose mapping was requested; finish() awaits it.
class BrowserDownload final : public PendingDownload {
 public:
  BrowserDownload(std::shared_ptr<BrowserRuntime> rt, int staging, uint64_t bytes)
      : rt_(std::move(rt)), staging_(staging), bytes_(bytes), submit_(rt_->submits()) {}
  ~BrowserDownload() override {
    if (staging_ < 0) return;
    try {
      finish(nullptr);
    } catch (...) {
      // Destructors do not throw; the next sync point reports the failure.
    }
  }
  void finish(void* dst) override {
    if (staging_ < 0) throw GpuError("[webgpu] a read back was finished twice");
    const int staging = staging_;
    staging_ = -1;
    const std::string error = js::gpu_finish_read(staging, dst, double(bytes_));
    if (!error.empty()) throw GpuError("[webgpu] read back failed: " + error);
    rt_->waited_for(submit_);
    rt_->raise_pending_errors();
  }

 private:
  std::shared_ptr<BrowserRuntime> rt_;
  int staging_;
  uint64_t bytes_;
  uint64_t submit_;  // the submit that carried the copy
};

std::unique_ptr<PendingDownload> BrowserRuntime::start_download(const Buffer& src, uint64_t offset, uint64_t bytes) {
  check_alive();
  open_ = true;
  const int staging = js::gpu_start_read(id_of(src), double(offset), double(bytes));
  flush();
  js::gpu_map_read(staging, double(bytes));
  return std::make_unique<BrowserDownload>(shared_from_this(), staging, bytes);
}

}  // namespace

// The page's adapter, whatever the preference (a browser offers one), or
// nullptr without navigator.gpu or an adapter.
std::shared_ptr<Runtime> create_runtime(AdapterPreference pref, std::string* notice) {
  const std::string reply = js::gpu_open();
  if (reply.empty()) return nullptr;
  const nlohmann::json j = nlohmann::json::parse(reply);
  if (j.contains("error")) return nullptr;
  AdapterInfo info;
  info.name = j.value("name", "");
  info.vendor = j.value("vendor", "");
  info.backend = "browser";
  // A fallback adapter, or a software rasteriser named as such (Chromium's
  // SwiftShader need not say it is a fallback): a CPU driver.
  info.adapter_type = j.value("fallback", false) || j.value("software", false) ? "cpu" : "unknown";
  info.driver = j.value("description", "");
  info.shader_f16 = false;  // the kernels are f32; not requested
  const nlohmann::json& l = j.at("limits");
  Limits limits;
  limits.max_storage_binding = l.at("maxStorageBufferBindingSize").get<uint64_t>();
  limits.max_buffer = l.at("maxBufferSize").get<uint64_t>();
  limits.storage_offset_alignment = l.at("minStorageBufferOffsetAlignment").get<uint32_t>();
  limits.max_workgroup_invocations = l.at("maxComputeInvocationsPerWorkgroup").get<uint32_t>();
  limits.max_workgroup_size_x = l.at("maxComputeWorkgroupSizeX").get<uint32_t>();
  limits.max_workgroup_size_y = l.at("maxComputeWorkgroupSizeY").get<uint32_t>();
  limits.max_workgroup_size_z = l.at("maxComputeWorkgroupSizeZ").get<uint32_t>();
  limits.max_workgroups_per_dim = l.at("maxComputeWorkgroupsPerDimension").get<uint32_t>();
  limits.max_workgroup_storage = l.at("maxComputeWorkgroupStorageSize").get<uint32_t>();
  limits.max_storage_buffers_per_stage = l.at("maxStorageBuffersPerShaderStage").get<uint32_t>();
  if (notice && j.value("fallback", false)) *notice = "using the browser's software WebGPU adapter " + info.name;
  return std::make_shared<BrowserRuntime>(std::move(info), limits,
                                          l.at("minUniformBufferOffsetAlignment").get<uint32_t>());
}

}  // namespace forge::gpu
