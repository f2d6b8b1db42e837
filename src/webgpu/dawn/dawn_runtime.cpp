#include "webgpu/dawn/dawn_runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "forge/error.h"
#include "webgpu/dawn/callback_state.h"
#include "webgpu/dawn/wgsl_bindings.h"

namespace forge::webgpu {

namespace {

constexpr WGPUBufferUsage kStorageUsage =
    WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
constexpr uint64_t kUniformArenaBytes = 1024 * 1024;  // parameter blocks of one batch (4096 dispatches at 256-byte alignment)

// $FORGE_GPU_TIMEOUT: seconds, a positive number. Garbage is refused rather
// than read as 0 (which made every wait time out).
double timeout_from_env() {
  const char* env = std::getenv("FORGE_GPU_TIMEOUT");
  if (!env) return 600.0;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(env, &end);
  if (end == env || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0)
    throw ValueError(std::string("[webgpu] FORGE_GPU_TIMEOUT='") + env +
                     "' is not a positive number of seconds");
  return v;
}

const char* error_type_name(WGPUErrorType t) {
  switch (t) {
    case WGPUErrorType_Validation: return "validation error";
    case WGPUErrorType_OutOfMemory: return "out of memory";
    case WGPUErrorType_Internal: return "internal error";
    default: return "error";
  }
}

}  // namespace

DawnRuntime::DawnRuntime(InstanceHandle instance, AdapterHandle adapter, gpu::AdapterInfo info)
    : instance_(std::move(instance)), adapter_(std::move(adapter)), info_(std::move(info)),
      timeout_s_(timeout_from_env()) {}

DawnRuntime::~DawnRuntime() {
  // Finish outstanding work so no callback outlives this object.
  try {
    if (device_ && !lost_ && encoder_) sync();
  } catch (...) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  pass_.reset();
  encoder_.reset();
  fence_.reset();
  bind_groups_.clear();
  pipelines_.clear();
  free_buffers_.clear();
  free_staging_.clear();
  uniform_buffer_.reset();
  queue_.reset();
  if (device_) {
    wgpuDeviceDestroy(device_.get());
    wgpuInstanceProcessEvents(instance_.get());  // deliver the device-lost callback now
  }
  device_.reset();
}

void DawnRuntime::open_device(bool disable_robustness) {
  WGPULimits supported{};
  if (wgpuAdapterGetLimits(adapter_.get(), &supported) != WGPUStatus_Success)
    throw GpuError("[webgpu] could not read the adapter's limits");

  std::vector<WGPUFeatureName> features;
  if (info_.shader_f16) features.push_back(WGPUFeatureName_ShaderF16);
  if (info_.subgroups) features.push_back(WGPUFeatureName_Subgroups);
  if (info_.timestamp_query) features.push_back(WGPUFeatureName_TimestampQuery);

  const char* enabled[] = {"disable_robustness"};
  // Profiling wants the timestamps as the device wrote them, not rounded.
  const bool profile = wants_profile() && info_.timestamp_query && !wants_host_clock();
  const char* disabled[] = {"timestamp_quantization"};
  WGPUDawnTogglesDescriptor toggles{};
  toggles.chain.sType = WGPUSType_DawnTogglesDescriptor;
  toggles.enabledToggleCount = disable_robustness ? 1 : 0;
  toggles.enabledToggles = enabled;
  toggles.disabledToggleCount = profile ? 1 : 0;
  toggles.disabledToggles = disabled;

  WGPUDeviceDescriptor desc{};
  desc.nextInChain = &toggles.chain;
  desc.label = view("forge");
  desc.requiredFeatureCount = features.size();
  desc.requiredFeatures = features.data();
  desc.requiredLimits = &supported;  // raise every limit to what the adapter offers
  desc.defaultQueue.label = view("forge queue");
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowProcessEvents;
  desc.deviceLostCallbackInfo.callback = [](const WGPUDevice*, WGPUDeviceLostReason reason, WGPUStringView msg,
                                            void* self, void*) {
    if (reason == WGPUDeviceLostReason_Destroyed || reason == WGPUDeviceLostReason_CallbackCancelled) {
      static_cast<DawnRuntime*>(self)->lost_ = true;
      return;
    }
    static_cast<DawnRuntime*>(self)->on_device_lost(to_string(msg));
  };
  desc.deviceLostCallbackInfo.userdata1 = this;
  desc.uncapturedErrorCallbackInfo.callback = [](const WGPUDevice*, WGPUErrorType type, WGPUStringView msg,
                                                 void* self, void*) {
    static_cast<DawnRuntime*>(self)->on_error(type, to_string(msg));
  };
  desc.uncapturedErrorCallbackInfo.userdata1 = this;

  struct Result {
    bool done = false;
    WGPUDevice device = nullptr;
    std::string message;
  };
  auto result = std::make_shared<Result>();
  WGPURequestDeviceCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView msg, void* r, void*) {
    auto res = take_callback_ref<Result>(r);
    res->done = true;
    if (status == WGPURequestDeviceStatus_Success) res->device = device;
    else res->message = to_string(msg);
  };
  cb.userdata1 = callback_ref(result);
  Lock lock(mu_);
  wgpuAdapterRequestDevice(adapter_.get(), &desc, cb);
  auto start = std::chrono::steady_clock::now();
  while (!result->done) {
    wgpuInstanceProcessEvents(instance_.get());
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60))
      throw GpuError("[webgpu] timed out requesting a device from " + info_.name);
    std::this_thread::yield();
  }
  if (!result->device) throw GpuError("[webgpu] could not create a device on " + info_.name + ": " + result->message);
  device_ = DeviceHandle(result->device);
  queue_ = QueueHandle(wgpuDeviceGetQueue(device_.get()));

  limits_.max_storage_binding = supported.maxStorageBufferBindingSize;
  limits_.max_buffer = supported.maxBufferSize;
  limits_.storage_offset_alignment = supported.minStorageBufferOffsetAlignment;
  limits_.max_workgroup_invocations = supported.maxComputeInvocationsPerWorkgroup;
  limits_.max_workgroup_size_x = supported.maxComputeWorkgroupSizeX;
  limits_.max_workgroup_size_y = supported.maxComputeWorkgroupSizeY;
  limits_.max_workgroup_size_z = supported.maxComputeWorkgroupSizeZ;
  limits_.max_workgroups_per_dim = supported.maxComputeWorkgroupsPerDimension;
  limits_.max_workgroup_storage = supported.maxComputeWorkgroupStorageSize;
  limits_.max_storage_buffers_per_stage = supported.maxStorageBuffersPerShaderStage;
  WGPUAdapterInfo raw{};
  if (wgpuAdapterGetInfo(adapter_.get(), &raw) == WGPUStatus_Success) {
    limits_.subgroup_min = raw.subgroupMinSize;
    limits_.subgroup_max = raw.subgroupMaxSize;
    wgpuAdapterInfoFreeMembers(raw);
  }
  uniform_alignment_ = supported.minUniformBufferOffsetAlignment;

  uniform_capacity_ = kUniformArenaBytes;
  uniform_buffer_ =
      create_buffer(lock, uniform_capacity_, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "parameter arena");
  if (wants_profile()) start_profiling(lock, profile);
  lock.unlock();
  info_.subgroup_size = probe_subgroup_size();
}

void DawnRuntime::on_error(WGPUErrorType type, const std::string& message) {
  std::lock_guard<std::mutex> lock(error_mu_);
  std::string where = current_op_.empty() ? "webgpu" : current_op_;
  errors_.push_back("[" + where + "] " + error_type_name(type) + ": " + message);
}

void DawnRuntime::on_device_lost(const std::string& message) {
  std::lock_guard<std::mutex> lock(error_mu_);
  lost_message_ = message;
  lost_ = true;
}

void DawnRuntime::check_alive() const {
  if (lost_) throw GpuError("[webgpu] the device was lost: " + (lost_message_.empty() ? "destroyed" : lost_message_));
}

void DawnRuntime::raise_pending_errors() {
  std::vector<std::string> errors;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    errors.swap(errors_);
  }
  check_alive();
  if (errors.empty()) return;
  std::string msg = errors.front();
  if (errors.size() > 1) msg += " (and " + std::to_string(errors.size() - 1) + " more errors)";
  throw GpuError(msg);
}

void DawnRuntime::wait_until(Lock& lock, const std::function<bool()>& done, const char* what) {
  auto start = std::chrono::steady_clock::now();
  const double limit = timeout_s_;
  int spins = 0;
  while (!done()) {
    if (device_) wgpuDeviceTick(device_.get());
    wgpuInstanceProcessEvents(instance_.get());
    if (done()) break;
    check_alive();
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", limit);
      throw GpuError(std::string("[webgpu] timed out after ") + secs + " s waiting for " + what +
                     " (FORGE_GPU_TIMEOUT)");
    }
    // Let other threads record work while the device runs.
    lock.unlock();
    if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    else std::this_thread::yield();
    lock.lock();
  }
}

uint64_t DawnRuntime::bucket(uint64_t bytes) {
  // Sizes round up to 256 bytes below 64 KiB, then to a quarter of the power of
  // two: at most 25% waste, few distinct sizes to pool.
  if (bytes <= 65536) return std::max<uint64_t>(256, (bytes + 255) / 256 * 256);
  uint64_t p = 1;
  while (p < bytes) p <<= 1;
  uint64_t quarter = p / 8;
  return (bytes + quarter - 1) / quarter * quarter;
}

DawnRuntime::ScopeResult DawnRuntime::pop_error_scope(Lock& lock, const char* what) {
  struct Pending {
    bool done = false;
    ScopeResult result;
  };
  auto pending = std::make_shared<Pending>();
  WGPUPopErrorScopeCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUPopErrorScopeStatus, WGPUErrorType type, WGPUStringView msg, void* p, void*) {
    auto pe = take_callback_ref<Pending>(p);
    pe->done = true;
    pe->result.type = type;
    pe->result.message = to_string(msg);
  };
  cb.userdata1 = callback_ref(pending);
  wgpuDevicePopErrorScope(device_.get(), cb);
  wait_until(lock, [&] { return pending->done; }, what);
  return pending->result;
}

BufferHandle DawnRuntime::create_buffer(Lock& lock, uint64_t bytes, WGPUBufferUsage usage, const char* what) {
  check_alive();
  if (bytes > limits_.max_buffer && limits_.max_buffer)
    throw GpuError("[webgpu] " + std::string(what) + " of " + std::to_string(bytes) +
                   " bytes exceeds the device's maximum buffer size " + std::to_string(limits_.max_buffer));
  WGPUBufferDescriptor desc{};
  desc.label = view(what);
  desc.usage = usage;
  desc.size = bytes;
  wgpuDevicePushErrorScope(device_.get(), WGPUErrorFilter_OutOfMemory);
  BufferHandle buf(wgpuDeviceCreateBuffer(device_.get(), &desc));
  ScopeResult scope = pop_error_scope(lock, "a buffer allocation");
  if (scope.type != WGPUErrorType_NoError) {
    throw GpuError("[webgpu] out of memory allocating " + std::to_string(bytes) + " bytes for " + what + ": " +
                   scope.message);
  }
  return buf;
}

std::shared_ptr<gpu::Buffer> DawnRuntime::allocate(uint64_t bytes) {
  if (limits_.max_buffer && bytes > limits_.max_buffer)
    throw GpuError("[webgpu] a buffer of " + std::to_string(bytes) + " bytes exceeds the device's maximum buffer size of " +
                   std::to_string(limits_.max_buffer) + " bytes");
  // Rounding up for the pool must not cross the limit the request respects.
  uint64_t size = limits_.max_buffer ? std::min(bucket(bytes), limits_.max_buffer / 4 * 4) : bucket(bytes);
  BufferHandle handle;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    auto& list = free_buffers_[size];
    if (!list.empty()) {
      handle = std::move(list.back().handle);
      list.pop_back();
      memory_.pooled -= size;
      memory_.in_use += size;
    }
  }
  if (!handle) {
    Lock lock(mu_);
    reserve(lock, size);
    release_idle(lock);
    try {
      handle = create_buffer(lock, size, kStorageUsage, "tensor");
    } catch (const GpuError&) {
      // The driver is out of memory: give the pool back and try once more.
      if (!release_pooled(lock)) throw;
      handle = create_buffer(lock, size, kStorageUsage, "tensor");
    }
    std::lock_guard<std::mutex> pool_lock(pool_mu_);
    memory_.in_use += size;
    memory_.peak = std::max(memory_.peak, memory_.in_use + memory_.pooled);
  }
  auto self = shared_from_this();
  return std::shared_ptr<gpu::Buffer>(new DawnBuffer(std::move(handle), size), [self](gpu::Buffer* b) {
    auto* db = static_cast<DawnBuffer*>(b);
    // Work already recorded that reads this buffer stays ordered before any
    // later use of it, so it can be reused at once.
    std::lock_guard<std::mutex> lock(self->pool_mu_);
    self->free_buffers_[db->size()].push_back({std::move(db->handle), std::chrono::steady_clock::now()});
    self->memory_.in_use -= db->size();
    self->memory_.pooled += db->size();
    delete db;
  });
}

void DawnRuntime::reserve(Lock& lock, uint64_t size) {
  const auto over_limit = [&] {
    std::lock_guard<std::mutex> pool_lock(pool_mu_);
    return memory_.limit && memory_.in_use + memory_.pooled + size > memory_.limit;
  };
  if (over_limit()) release_pooled(lock);
  if (over_limit()) {
    std::lock_guard<std::mutex> pool_lock(pool_mu_);
    throw GpuError("[webgpu] out of device memory: " + std::to_string(size) + " more bytes with " +
                   std::to_string(memory_.in_use) + " in use would pass the limit of " +
                   std::to_string(memory_.limit) + " bytes");
  }
}

uint64_t DawnRuntime::release_pooled(Lock& lock, std::chrono::steady_clock::time_point older_than) {
  std::vector<BufferHandle> released;
  uint64_t bytes = 0;
  {
    std::lock_guard<std::mutex> pool_lock(pool_mu_);
    for (auto* pool : {&free_buffers_, &free_staging_}) {
      for (auto& [size, list] : *pool) {
        auto keep = std::partition(list.begin(), list.end(),
                                   [&](const Pooled& p) { return p.since >= older_than; });
        for (auto it = keep; it != list.end(); ++it) {
          released.push_back(std::move(it->handle));
          bytes += size;
        }
        list.erase(keep, list.end());
      }
    }
    memory_.pooled -= bytes;
  }
  // A cached bind group holds its buffers: drop them all, or the memory stays
  // (and a new buffer at a freed address could meet a stale group).
  if (!released.empty()) bind_groups_.clear();
  released.clear();  // the releases, with mu_ held
  return bytes;
}

void DawnRuntime::release_idle(Lock& lock) {
  const auto now = std::chrono::steady_clock::now();
  const auto idle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(pool_idle_s_));
  // At most a few checks per idle period: the check walks the pool.
  if (now - last_idle_check_ < idle / 4) return;
  last_idle_check_ = now;
  release_pooled(lock, now - idle);
}

gpu::Runtime::MemoryStats DawnRuntime::memory_stats() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return memory_;
}

uint64_t DawnRuntime::trim() {
  Lock lock(mu_);
  return release_pooled(lock);
}

void DawnRuntime::set_memory_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  memory_.limit = bytes;
}

void DawnRuntime::set_pool_idle_seconds(double seconds) {
  Lock lock(mu_);
  pool_idle_s_ = seconds;
}

void DawnRuntime::lose_device_for_testing() {
  Lock lock(mu_);
  if (device_) wgpuDeviceDestroy(device_.get());
}

static WGPUBuffer handle_of(const gpu::Buffer& b) { return static_cast<const DawnBuffer&>(b).handle.get(); }

WGPUCommandEncoder DawnRuntime::encoder() {
  if (!encoder_) {
    WGPUCommandEncoderDescriptor desc{};
    desc.label = view("forge batch");
    encoder_ = CommandEncoderHandle(wgpuDeviceCreateCommandEncoder(device_.get(), &desc));
  }
  return encoder_.get();
}

void DawnRuntime::end_pass() {
  if (pass_) {
    wgpuComputePassEncoderEnd(pass_.get());
    pass_.reset();
  }
}

void DawnRuntime::upload(const gpu::Buffer& dst, uint64_t offset, const void* src, uint64_t bytes) {
  Lock lock(mu_);
  check_alive();
  // queue writes run before the open batch: submit it first so that earlier
  // recorded reads of this buffer see the old contents.
  if (encoder_) flush_locked(lock);
  wgpuQueueWriteBuffer(queue_.get(), handle_of(dst), offset, src, bytes);
}

void DawnRuntime::copy(const gpu::Buffer& src, uint64_t src_offset, const gpu::Buffer& dst, uint64_t dst_offset,
                       uint64_t bytes) {
  Lock lock(mu_);
  check_alive();
  end_pass();
  wgpuCommandEncoderCopyBufferToBuffer(encoder(), handle_of(src), src_offset, handle_of(dst), dst_offset, bytes);
  batch_ops_.push_back("copy");
}

void DawnRuntime::clear(const gpu::Buffer& dst, uint64_t offset, uint64_t bytes) {
  Lock lock(mu_);
  check_alive();
  end_pass();
  wgpuCommandEncoderClearBuffer(encoder(), handle_of(dst), offset, bytes);
  batch_ops_.push_back("clear");
}

size_t DawnRuntime::PipelineKeyHash::operator()(const PipelineKey& k) const {
  size_t h = std::hash<const void*>()(k.kernel);
  for (uint32_t i = 0; i < k.count; ++i) h = h * 31 + std::hash<double>()(k.values[i]);
  return h;
}

bool DawnRuntime::BindKey::operator==(const BindKey& o) const {
  if (layout != o.layout || count != o.count) return false;
  for (uint32_t i = 0; i < count; ++i)
    if (!(ranges[i] == o.ranges[i])) return false;
  return true;
}

size_t DawnRuntime::BindKeyHash::operator()(const BindKey& k) const {
  size_t h = std::hash<const void*>()(k.layout);
  for (uint32_t i = 0; i < k.count; ++i) {
    h = h * 1000003u ^ std::hash<const void*>()(k.ranges[i].buffer);
    h = h * 1000003u ^ std::hash<uint64_t>()(k.ranges[i].offset);
    h = h * 1000003u ^ std::hash<uint64_t>()(k.ranges[i].size);
  }
  return h;
}

const DawnRuntime::Pipeline& DawnRuntime::pipeline(Lock& lock, const gpu::Dispatch& d) {
  if (d.constants.size() > kMaxConstants)
    throw GpuError(std::string("[") + d.op + "] kernel '" + std::string(d.kernel->name) + "' has more than " +
                   std::to_string(kMaxConstants) + " override constants");
  PipelineKey key;
  key.kernel = d.kernel;
  for (const auto& c : d.constants) key.values[key.count++] = c.value;
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return it->second;

  // The layout, from the kernel's declarations.
  std::vector<WGPUBindGroupLayoutEntry> layout_entries;
  for (const WgslBinding& b : wgsl_bindings(d.kernel->source, d.kernel->name)) {
    WGPUBindGroupLayoutEntry e{};
    e.binding = b.binding;
    e.visibility = WGPUShaderStage_Compute;
    switch (b.kind) {
      case WgslBinding::Kind::Uniform:
        e.buffer.type = WGPUBufferBindingType_Uniform;
        e.buffer.hasDynamicOffset = 1;
        break;
      case WgslBinding::Kind::ReadOnlyStorage: e.buffer.type = WGPUBufferBindingType_ReadOnlyStorage; break;
      case WgslBinding::Kind::Storage: e.buffer.type = WGPUBufferBindingType_Storage; break;
    }
    layout_entries.push_back(e);
  }

  wgpuDevicePushErrorScope(device_.get(), WGPUErrorFilter_Validation);
  Pipeline p;
  WGPUBindGroupLayoutDescriptor bgl{};
  bgl.label = view(d.kernel->name);
  bgl.entryCount = layout_entries.size();
  bgl.entries = layout_entries.data();
  p.layout = BindGroupLayoutHandle(wgpuDeviceCreateBindGroupLayout(device_.get(), &bgl));
  WGPUBindGroupLayout layouts[] = {p.layout.get()};
  WGPUPipelineLayoutDescriptor pl{};
  pl.label = view(d.kernel->name);
  pl.bindGroupLayoutCount = 1;
  pl.bindGroupLayouts = layouts;
  p.pipeline_layout = PipelineLayoutHandle(wgpuDeviceCreatePipelineLayout(device_.get(), &pl));

  WGPUShaderSourceWGSL wgsl{};
  wgsl.chain.sType = WGPUSType_ShaderSourceWGSL;
  wgsl.code = view(d.kernel->source);
  WGPUShaderModuleDescriptor sm{};
  sm.nextInChain = &wgsl.chain;
  sm.label = view(d.kernel->name);
  ShaderModuleHandle module(wgpuDeviceCreateShaderModule(device_.get(), &sm));

  std::vector<WGPUConstantEntry> constants;
  for (const auto& c : d.constants) {
    WGPUConstantEntry e{};
    e.key = view(c.name);
    e.value = c.value;
    constants.push_back(e);
  }
  WGPUComputePipelineDescriptor pd{};
  pd.label = view(d.kernel->name);
  pd.layout = p.pipeline_layout.get();
  pd.compute.module = module.get();
  pd.compute.entryPoint = view(d.kernel->entry);
  pd.compute.constantCount = constants.size();
  pd.compute.constants = constants.data();
  p.pipeline = ComputePipelineHandle(wgpuDeviceCreateComputePipeline(device_.get(), &pd));

  ScopeResult scope = pop_error_scope(lock, "a pipeline compilation");
  if (scope.type != WGPUErrorType_NoError)
    throw GpuError("[" + std::string(d.op) + "] kernel '" + std::string(d.kernel->name) +
                   "' failed to compile: " + scope.message);
  // Another thread may have compiled the same key while the lock was let go.
  return pipelines_.emplace(key, std::move(p)).first->second;
}

void DawnRuntime::dispatch(const gpu::Dispatch& d) {
  Lock lock(mu_);
  check_alive();
  current_op_ = d.op;
  const Pipeline& p = pipeline(lock, d);
  current_op_ = d.op;  // a compile may have let another thread in
  if (d.args.size() + 1 > kMaxBindings)
    throw GpuError(std::string("[") + d.op + "] more than " + std::to_string(kMaxBindings - 1) + " storage bindings");
  // Host-clock profiling times this dispatch alone: what came before is
  // submitted and finished first (before its parameters join the batch).
  const bool host_clock = profile_ && profile_->host_clock;
  std::chrono::steady_clock::time_point started;
  if (host_clock) started = begin_host_timed(lock);

  // Parameters go to this batch's arena; the bind group takes the slot as a
  // dynamic offset, so it does not depend on the slot.
  uint32_t slot = 0;
  if (d.params_size) {
    uint64_t aligned = (uniform_host_.size() + uniform_alignment_ - 1) / uniform_alignment_ * uniform_alignment_;
    if (aligned + d.params_size > uniform_capacity_) {
      flush_locked(lock);
      aligned = 0;
    }
    slot = uint32_t(aligned);
    uniform_host_.resize(slot + d.params_size);
    std::memcpy(uniform_host_.data() + slot, d.params, d.params_size);
  }

  BindKey key;
  key.layout = p.layout.get();
  std::array<uint32_t, kMaxBindings> binding_of{};
  if (d.params_size) {
    binding_of[key.count] = 0;
    key.ranges[key.count++] = {uniform_buffer_.get(), 0, (d.params_size + 15) / 16 * 16};
  }
  for (size_t i = 0; i < d.args.size(); ++i) {
    const gpu::Arg& a = d.args[i];
    uint64_t size = a.size ? (a.size + 3) / 4 * 4 : a.buffer->size() - a.offset;
    if (size > binding_limit())
      throw GpuError(std::string("[") + d.op + "] binding " + std::to_string(i + 1) + " spans " +
                     std::to_string(size) + " bytes, over the device's storage binding limit of " +
                     std::to_string(binding_limit()));
    binding_of[key.count] = uint32_t(i + 1);
    key.ranges[key.count++] = {handle_of(*a.buffer), a.offset, size};
  }
  auto found = bind_groups_.find(key);
  if (found == bind_groups_.end()) {
    std::array<WGPUBindGroupEntry, kMaxBindings> entries{};
    for (uint32_t i = 0; i < key.count; ++i) {
      entries[i].binding = binding_of[i];
      entries[i].buffer = key.ranges[i].buffer;
      entries[i].offset = key.ranges[i].offset;
      entries[i].size = key.ranges[i].size;
    }
    WGPUBindGroupDescriptor bd{};
    bd.layout = p.layout.get();
    bd.entryCount = key.count;
    bd.entries = entries.data();
    if (bind_groups_.size() >= 16384) bind_groups_.clear();  // bound the cache; it refills as needed
    found = bind_groups_.emplace(key, BindGroupHandle(wgpuDeviceCreateBindGroup(device_.get(), &bd))).first;
  }

  if (profile_ && !host_clock) {
    begin_profiled_pass(d);
  } else if (!pass_) {
    WGPUComputePassDescriptor cp{};
    pass_ = ComputePassHandle(wgpuCommandEncoderBeginComputePass(encoder(), &cp));
  }
  wgpuComputePassEncoderSetPipeline(pass_.get(), p.pipeline.get());
  wgpuComputePassEncoderSetBindGroup(pass_.get(), 0, found->second.get(), d.params_size ? 1 : 0, &slot);
  wgpuComputePassEncoderDispatchWorkgroups(pass_.get(), d.groups[0], d.groups[1], d.groups[2]);
  batch_ops_.push_back(d.op);
  current_op_.clear();
  if (host_clock) {
    end_host_timed(lock, d, started);
  } else if (profile_) {
    end_pass();
    if (profile_->batch.size() == kProfileSlots) flush_locked(lock);
  } else if (pacer_.submit_now(batch_ops_.size())) {
    flush_locked(lock);
  }
}

void DawnRuntime::flush() {
  Lock lock(mu_);
  flush_locked(lock);
}

void DawnRuntime::flush_locked(Lock& lock) {
  check_alive();
  if (!encoder_) return;
  end_pass();
  if (profile_ && !profile_->host_clock) resolve_profile();
  if (!uniform_host_.empty())
    wgpuQueueWriteBuffer(queue_.get(), uniform_buffer_.get(), 0, uniform_host_.data(),
                         (uniform_host_.size() + 3) / 4 * 4);
  std::string ops;
  for (size_t i = 0; i < batch_ops_.size() && i < 8; ++i) ops += std::string(i ? ", " : "") + batch_ops_[i];
  if (batch_ops_.size() > 8) ops += ", ...";
  current_op_ = "batch of " + ops;
  CommandBufferHandle cmd(wgpuCommandEncoderFinish(encoder_.get(), nullptr));
  WGPUCommandBuffer buffers[] = {cmd.get()};
  wgpuQueueSubmit(queue_.get(), 1, buffers);
  pacer_.submitted();
  current_op_.clear();
  encoder_.reset();
  batch_ops_.clear();
  uniform_host_.clear();
  if (profile_ && !profile_->host_clock) collect_profile(lock);
}

void DawnRuntime::sync() {
  // Reading back a word waits for everything submitted before it: mapping
  // completes in queue order. (This Dawn build's queue work-done callback
  // was not seen to fire under ProcessEvents, so it is not relied on.)
  std::unique_ptr<gpu::PendingDownload> pending;
  {
    Lock lock(mu_);
    if (!fence_) fence_ = std::make_unique<DawnBuffer>(create_buffer(lock, 256, kStorageUsage, "fence"), 256);
    pending = start_download_locked(lock, *fence_, 0, 4);
  }
  uint32_t word = 0;
  pending->finish(&word);
}

// A staging buffer whose mapping was requested. The mapping callback fills
// shared state (callback_state.h), so giving up on the wait -- a timeout, a
// lost device -- leaves nothing for a late callback to corrupt.
class DawnPendingDownload final : public gpu::PendingDownload {
 public:
  using MapResult = DawnRuntime::MapResult;
  DawnPendingDownload(std::shared_ptr<DawnRuntime> rt, BufferHandle staging, uint64_t size, uint64_t bytes,
                      uint64_t submit)
      : rt_(std::move(rt)), staging_(std::move(staging)), size_(size), bytes_(bytes), submit_(submit),
        map_(std::make_shared<MapResult>()) {}

  ~DawnPendingDownload() override {
    if (!staging_) return;
    try {
      finish(nullptr);
    } catch (...) {
      // Destructors do not throw; the next sync point reports the failure.
    }
  }

  void finish(void* dst) override {
    if (!staging_) throw GpuError("[webgpu] a read back was finished twice");
    rt_->finish_download(std::move(staging_), size_, bytes_, submit_, *map_, dst);
  }

  const std::shared_ptr<MapResult>& map_state() const { return map_; }

 private:
  std::shared_ptr<DawnRuntime> rt_;
  BufferHandle staging_;
  uint64_t size_, bytes_;
  uint64_t submit_;  // the submit that carried the copy
  std::shared_ptr<MapResult> map_;
};

std::unique_ptr<gpu::PendingDownload> DawnRuntime::start_download(const gpu::Buffer& src, uint64_t offset,
                                                                  uint64_t bytes) {
  Lock lock(mu_);
  return start_download_locked(lock, src, offset, bytes);
}

std::unique_ptr<gpu::PendingDownload> DawnRuntime::start_download_locked(Lock& lock, const gpu::Buffer& src,
                                                                         uint64_t offset, uint64_t bytes) {
  check_alive();
  release_idle(lock);
  uint64_t size = bucket(bytes);
  BufferHandle staging;
  {
    std::lock_guard<std::mutex> pool_lock(pool_mu_);
    auto& list = free_staging_[size];
    if (!list.empty()) {
      staging = std::move(list.back().handle);
      list.pop_back();
      memory_.pooled -= size;
      memory_.in_use += size;
    }
  }
  if (!staging) {
    reserve(lock, size);
    staging = create_buffer(lock, size, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "readback");
    std::lock_guard<std::mutex> pool_lock(pool_mu_);
    memory_.in_use += size;
    memory_.peak = std::max(memory_.peak, memory_.in_use + memory_.pooled);
  }
  end_pass();
  wgpuCommandEncoderCopyBufferToBuffer(encoder(), handle_of(src), offset, staging.get(), 0, bytes);
  batch_ops_.push_back("readback");
  flush_locked(lock);

  WGPUBuffer raw = staging.get();
  auto pending =
      std::make_unique<DawnPendingDownload>(shared_from_this(), std::move(staging), size, bytes, pacer_.submits());
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUMapAsyncStatus status, WGPUStringView msg, void* m, void*) {
    auto state = take_callback_ref<DawnRuntime::MapResult>(m);
    state->done = true;
    state->status = status;
    state->message = to_string(msg);
  };
  cb.userdata1 = callback_ref(pending->map_state());
  wgpuBufferMapAsync(raw, WGPUMapMode_Read, 0, size_t(bytes), cb);
  return pending;
}

void DawnRuntime::finish_download(BufferHandle staging, uint64_t size, uint64_t bytes, uint64_t submit,
                                  const MapResult& map, void* dst) {
  Lock lock(mu_);
  try {
    wait_until(lock, [&] { return map.done; }, "a readback");
    pacer_.waited_for(submit);
    raise_pending_errors();
    if (map.status != WGPUMapAsyncStatus_Success) throw GpuError("[webgpu] readback failed: " + map.message);
    if (dst) {
      const void* p = wgpuBufferGetConstMappedRange(staging.get(), 0, size_t(bytes));
      if (!p) throw GpuError("[webgpu] readback mapping returned no memory");
      std::memcpy(dst, p, bytes);
    }
  } catch (...) {
    // Released (under the lock), not pooled: its mapping may still be pending.
    staging.reset();
    std::lock_guard<std::mutex> pool_lock(pool_mu_);
    memory_.in_use -= size;
    throw;
  }
  wgpuBufferUnmap(staging.get());
  std::lock_guard<std::mutex> pool_lock(pool_mu_);
  free_staging_[size].push_back({std::move(staging), std::chrono::steady_clock::now()});
  memory_.in_use -= size;
  memory_.pooled += size;
}

}  // namespace forge::webgpu
