// The subset of the webgpu.h C API that forge uses, declared from the
// specification (webgpu.yml) and checked against the Dawn build forge links.
//
// Two places where the Dawn build differs from the specification, taken from
// the Dawn build itself:
//  - WGPULimits has four more uint32_t members after maxImmediateSize
//    (storage buffers/textures in the vertex and fragment stages);
//  - WGPUFeatureName uses the older numbering (shader-f16 = 10, subgroups = 17,
//    timestamp-query = 3), and the queue work-done callback has no message.
// tests/unit/test_webgpu_layout.cpp guards the struct sizes this file assumes.
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef WGPUFlags WGPUBufferUsage;
typedef WGPUFlags WGPUMapMode;
typedef WGPUFlags WGPUShaderStage;

typedef struct WGPUInstanceImpl* WGPUInstance;
typedef struct WGPUAdapterImpl* WGPUAdapter;
typedef struct WGPUDeviceImpl* WGPUDevice;
typedef struct WGPUQueueImpl* WGPUQueue;
typedef struct WGPUBufferImpl* WGPUBuffer;
typedef struct WGPUShaderModuleImpl* WGPUShaderModule;
typedef struct WGPUComputePipelineImpl* WGPUComputePipeline;
typedef struct WGPUBindGroupLayoutImpl* WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl* WGPUBindGroup;
typedef struct WGPUCommandEncoderImpl* WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl* WGPUComputePassEncoder;
typedef struct WGPUCommandBufferImpl* WGPUCommandBuffer;
typedef struct WGPUQuerySetImpl* WGPUQuerySet;
typedef struct WGPUSamplerImpl* WGPUSampler;
typedef struct WGPUTextureViewImpl* WGPUTextureView;
typedef struct WGPUPipelineLayoutImpl* WGPUPipelineLayout;

constexpr uint64_t WGPU_STRLEN = UINT64_MAX;
constexpr uint64_t WGPU_WHOLE_SIZE = UINT64_MAX;

constexpr WGPUBufferUsage WGPUBufferUsage_MapRead = 1 << 0;
constexpr WGPUBufferUsage WGPUBufferUsage_MapWrite = 1 << 1;
constexpr WGPUBufferUsage WGPUBufferUsage_CopySrc = 1 << 2;
constexpr WGPUBufferUsage WGPUBufferUsage_CopyDst = 1 << 3;
constexpr WGPUBufferUsage WGPUBufferUsage_Uniform = 1 << 6;
constexpr WGPUBufferUsage WGPUBufferUsage_Storage = 1 << 7;
constexpr WGPUBufferUsage WGPUBufferUsage_QueryResolve = 1 << 9;
constexpr WGPUMapMode WGPUMapMode_Read = 1 << 0;
constexpr WGPUShaderStage WGPUShaderStage_Compute = 1 << 2;

typedef enum WGPUSType : uint32_t {
  WGPUSType_ShaderSourceWGSL = 2,
  WGPUSType_DawnTogglesDescriptor = 327690,
} WGPUSType;

typedef enum WGPUStatus : uint32_t { WGPUStatus_Success = 1, WGPUStatus_Error = 2 } WGPUStatus;
typedef enum WGPUCallbackMode : uint32_t {
  WGPUCallbackMode_WaitAnyOnly = 1,
  WGPUCallbackMode_AllowProcessEvents = 2,
  WGPUCallbackMode_AllowSpontaneous = 3,
} WGPUCallbackMode;
typedef enum WGPURequestAdapterStatus : uint32_t {
  WGPURequestAdapterStatus_Success = 1,
  WGPURequestAdapterStatus_CallbackCancelled = 2,
  WGPURequestAdapterStatus_Unavailable = 3,
  WGPURequestAdapterStatus_Error = 4,
} WGPURequestAdapterStatus;
typedef enum WGPURequestDeviceStatus : uint32_t {
  WGPURequestDeviceStatus_Success = 1,
  WGPURequestDeviceStatus_CallbackCancelled = 2,
  WGPURequestDeviceStatus_Error = 3,
} WGPURequestDeviceStatus;
typedef enum WGPUMapAsyncStatus : uint32_t {
  WGPUMapAsyncStatus_Success = 1,
  WGPUMapAsyncStatus_CallbackCancelled = 2,
  WGPUMapAsyncStatus_Error = 3,
  WGPUMapAsyncStatus_Aborted = 4,
} WGPUMapAsyncStatus;
typedef enum WGPUPopErrorScopeStatus : uint32_t {
  WGPUPopErrorScopeStatus_Success = 1,
  WGPUPopErrorScopeStatus_CallbackCancelled = 2,
  WGPUPopErrorScopeStatus_Error = 3,
} WGPUPopErrorScopeStatus;
typedef enum WGPUQueueWorkDoneStatus : uint32_t {
  WGPUQueueWorkDoneStatus_Success = 1,
} WGPUQueueWorkDoneStatus;
typedef enum WGPUErrorType : uint32_t {
  WGPUErrorType_NoError = 1,
  WGPUErrorType_Validation = 2,
  WGPUErrorType_OutOfMemory = 3,
  WGPUErrorType_Internal = 4,
  WGPUErrorType_Unknown = 5,
} WGPUErrorType;
typedef enum WGPUErrorFilter : uint32_t {
  WGPUErrorFilter_Validation = 1,
  WGPUErrorFilter_OutOfMemory = 2,
  WGPUErrorFilter_Internal = 3,
} WGPUErrorFilter;
typedef enum WGPUDeviceLostReason : uint32_t {
  WGPUDeviceLostReason_Unknown = 1,
  WGPUDeviceLostReason_Destroyed = 2,
  WGPUDeviceLostReason_CallbackCancelled = 3,
  WGPUDeviceLostReason_FailedCreation = 4,
} WGPUDeviceLostReason;
typedef enum WGPUBackendType : uint32_t {
  WGPUBackendType_Undefined = 0,
  WGPUBackendType_Null = 1,
  WGPUBackendType_WebGPU = 2,
  WGPUBackendType_D3D11 = 3,
  WGPUBackendType_D3D12 = 4,
  WGPUBackendType_Metal = 5,
  WGPUBackendType_Vulkan = 6,
  WGPUBackendType_OpenGL = 7,
  WGPUBackendType_OpenGLES = 8,
} WGPUBackendType;
typedef enum WGPUAdapterType : uint32_t {
  WGPUAdapterType_DiscreteGPU = 1,
  WGPUAdapterType_IntegratedGPU = 2,
  WGPUAdapterType_CPU = 3,
  WGPUAdapterType_Unknown = 4,
} WGPUAdapterType;
typedef enum WGPUFeatureLevel : uint32_t {
  WGPUFeatureLevel_Undefined = 0,
  WGPUFeatureLevel_Compatibility = 1,
  WGPUFeatureLevel_Core = 2,
} WGPUFeatureLevel;
typedef enum WGPUPowerPreference : uint32_t {
  WGPUPowerPreference_Undefined = 0,
  WGPUPowerPreference_LowPower = 1,
  WGPUPowerPreference_HighPerformance = 2,
} WGPUPowerPreference;
// Older numbering, as this Dawn build has it.
typedef enum WGPUFeatureName : uint32_t {
  WGPUFeatureName_TimestampQuery = 3,
  WGPUFeatureName_ShaderF16 = 10,
  WGPUFeatureName_Subgroups = 17,
} WGPUFeatureName;

typedef struct WGPUStringView {
  const char* data;
  size_t length;
} WGPUStringView;

typedef struct WGPUChainedStruct {
  const struct WGPUChainedStruct* next;
  WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
  uint64_t id;
} WGPUFuture;

typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                                           WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device,
                                          WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message, void* userdata1,
                                      void* userdata2);
typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus status, WGPUErrorType type,
                                          WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, void* userdata1, void* userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice* device, WGPUErrorType type, WGPUStringView message,
                                            void* userdata1, void* userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice* device, WGPUDeviceLostReason reason,
                                       WGPUStringView message, void* userdata1, void* userdata2);

#define FORGE_WGPU_CALLBACK_INFO(Name, Fn) \
  typedef struct Name {                    \
    const WGPUChainedStruct* nextInChain;  \
    WGPUCallbackMode mode;                 \
    Fn callback;                           \
    void* userdata1;                       \
    void* userdata2;                       \
  } Name;
FORGE_WGPU_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback)
FORGE_WGPU_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback)
FORGE_WGPU_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback)
FORGE_WGPU_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback)
FORGE_WGPU_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback)
FORGE_WGPU_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback)
#undef FORGE_WGPU_CALLBACK_INFO

typedef struct WGPUUncapturedErrorCallbackInfo {
  const WGPUChainedStruct* nextInChain;
  WGPUUncapturedErrorCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPULimits {
  WGPUChainedStruct* nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize;
  // Dawn-build members beyond the specification.
  uint32_t maxStorageBuffersInVertexStage;
  uint32_t maxStorageTexturesInVertexStage;
  uint32_t maxStorageBuffersInFragmentStage;
  uint32_t maxStorageTexturesInFragmentStage;
} WGPULimits;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct* nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPURequestAdapterOptions {
  const WGPUChainedStruct* nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  void* compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct WGPUQueueDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const WGPUFeatureName* requiredFeatures;
  const WGPULimits* requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUShaderModuleDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUConstantEntry {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView key;
  double value;
} WGPUConstantEntry;

typedef struct WGPUComputeState {
  const WGPUChainedStruct* nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const WGPUConstantEntry* constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout;
  WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef enum WGPUBufferBindingType : uint32_t {
  WGPUBufferBindingType_BindingNotUsed = 0,
  WGPUBufferBindingType_Uniform = 2,
  WGPUBufferBindingType_Storage = 3,
  WGPUBufferBindingType_ReadOnlyStorage = 4,
} WGPUBufferBindingType;

typedef struct WGPUBufferBindingLayout {
  const WGPUChainedStruct* nextInChain;
  WGPUBufferBindingType type;
  WGPUBool hasDynamicOffset;
  uint64_t minBindingSize;
} WGPUBufferBindingLayout;

// Zero (BindingNotUsed) in the sampler and texture members of a buffer entry.
typedef struct WGPUSamplerBindingLayout {
  const WGPUChainedStruct* nextInChain;
  uint32_t type;
} WGPUSamplerBindingLayout;

typedef struct WGPUTextureBindingLayout {
  const WGPUChainedStruct* nextInChain;
  uint32_t sampleType;
  uint32_t viewDimension;
  WGPUBool multisampled;
} WGPUTextureBindingLayout;

typedef struct WGPUStorageTextureBindingLayout {
  const WGPUChainedStruct* nextInChain;
  uint32_t access;
  uint32_t format;
  uint32_t viewDimension;
} WGPUStorageTextureBindingLayout;

typedef struct WGPUBindGroupLayoutEntry {
  const WGPUChainedStruct* nextInChain;
  uint32_t binding;
  WGPUShaderStage visibility;
  uint32_t bindingArraySize;
  WGPUBufferBindingLayout buffer;
  WGPUSamplerBindingLayout sampler;
  WGPUTextureBindingLayout texture;
  WGPUStorageTextureBindingLayout storageTexture;
} WGPUBindGroupLayoutEntry;

typedef struct WGPUBindGroupLayoutDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t entryCount;
  const WGPUBindGroupLayoutEntry* entries;
} WGPUBindGroupLayoutDescriptor;

typedef struct WGPUPipelineLayoutDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t bindGroupLayoutCount;
  const WGPUBindGroupLayout* bindGroupLayouts;
  uint32_t immediateSize;
} WGPUPipelineLayoutDescriptor;

typedef struct WGPUBindGroupEntry {
  const WGPUChainedStruct* nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  WGPUSampler sampler;
  WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry* entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef enum WGPUQueryType : uint32_t { WGPUQueryType_Occlusion = 1, WGPUQueryType_Timestamp = 2 } WGPUQueryType;

typedef struct WGPUQuerySetDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUQueryType type;
  uint32_t count;
} WGPUQuerySetDescriptor;

typedef struct WGPUPassTimestampWrites {
  const WGPUChainedStruct* nextInChain;
  WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex;
  uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;

typedef struct WGPUComputePassDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  const WGPUPassTimestampWrites* timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUCommandBufferDescriptor {
  const WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUCommandBufferDescriptor;

WGPUInstance wgpuCreateInstance(const void* descriptor);
WGPUFuture wgpuInstanceRequestAdapter(WGPUInstance instance, const WGPURequestAdapterOptions* options,
                                      WGPURequestAdapterCallbackInfo callbackInfo);
void wgpuInstanceProcessEvents(WGPUInstance instance);
void wgpuInstanceRelease(WGPUInstance instance);

WGPUStatus wgpuAdapterGetLimits(WGPUAdapter adapter, WGPULimits* limits);
WGPUStatus wgpuAdapterGetInfo(WGPUAdapter adapter, WGPUAdapterInfo* info);
WGPUBool wgpuAdapterHasFeature(WGPUAdapter adapter, WGPUFeatureName feature);
WGPUFuture wgpuAdapterRequestDevice(WGPUAdapter adapter, const WGPUDeviceDescriptor* descriptor,
                                    WGPURequestDeviceCallbackInfo callbackInfo);
void wgpuAdapterInfoFreeMembers(WGPUAdapterInfo info);
void wgpuAdapterRelease(WGPUAdapter adapter);

WGPUQueue wgpuDeviceGetQueue(WGPUDevice device);
WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice device, const WGPUBufferDescriptor* descriptor);
WGPUShaderModule wgpuDeviceCreateShaderModule(WGPUDevice device, const WGPUShaderModuleDescriptor* descriptor);
WGPUComputePipeline wgpuDeviceCreateComputePipeline(WGPUDevice device,
                                                    const WGPUComputePipelineDescriptor* descriptor);
WGPUBindGroup wgpuDeviceCreateBindGroup(WGPUDevice device, const WGPUBindGroupDescriptor* descriptor);
WGPUBindGroupLayout wgpuDeviceCreateBindGroupLayout(WGPUDevice device,
                                                    const WGPUBindGroupLayoutDescriptor* descriptor);
WGPUPipelineLayout wgpuDeviceCreatePipelineLayout(WGPUDevice device, const WGPUPipelineLayoutDescriptor* descriptor);
WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice device,
                                                  const WGPUCommandEncoderDescriptor* descriptor);
void wgpuDevicePushErrorScope(WGPUDevice device, WGPUErrorFilter filter);
WGPUFuture wgpuDevicePopErrorScope(WGPUDevice device, WGPUPopErrorScopeCallbackInfo callbackInfo);
void wgpuDeviceDestroy(WGPUDevice device);
void wgpuDeviceTick(WGPUDevice device);
void wgpuDeviceRelease(WGPUDevice device);

void wgpuQueueSubmit(WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer* commands);
void wgpuQueueWriteBuffer(WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset, const void* data,
                          size_t size);
WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue queue, WGPUQueueWorkDoneCallbackInfo callbackInfo);
void wgpuQueueRelease(WGPUQueue queue);

WGPUFuture wgpuBufferMapAsync(WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size,
                              WGPUBufferMapCallbackInfo callbackInfo);
const void* wgpuBufferGetConstMappedRange(WGPUBuffer buffer, size_t offset, size_t size);
void wgpuBufferUnmap(WGPUBuffer buffer);
void wgpuBufferDestroy(WGPUBuffer buffer);
void wgpuBufferRelease(WGPUBuffer buffer);

WGPUBindGroupLayout wgpuComputePipelineGetBindGroupLayout(WGPUComputePipeline pipeline, uint32_t groupIndex);
void wgpuComputePipelineRelease(WGPUComputePipeline pipeline);
void wgpuBindGroupLayoutRelease(WGPUBindGroupLayout layout);
void wgpuBindGroupRelease(WGPUBindGroup group);
void wgpuPipelineLayoutRelease(WGPUPipelineLayout layout);
void wgpuShaderModuleRelease(WGPUShaderModule module);

WGPUComputePassEncoder wgpuCommandEncoderBeginComputePass(WGPUCommandEncoder encoder,
                                                          const WGPUComputePassDescriptor* descriptor);
void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder encoder, WGPUBuffer source, uint64_t sourceOffset,
                                          WGPUBuffer destination, uint64_t destinationOffset, uint64_t size);
void wgpuCommandEncoderClearBuffer(WGPUCommandEncoder encoder, WGPUBuffer buffer, uint64_t offset, uint64_t size);
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder encoder,
                                           const WGPUCommandBufferDescriptor* descriptor);
void wgpuCommandEncoderRelease(WGPUCommandEncoder encoder);
void wgpuCommandEncoderResolveQuerySet(WGPUCommandEncoder encoder, WGPUQuerySet querySet, uint32_t firstQuery,
                                       uint32_t queryCount, WGPUBuffer destination, uint64_t destinationOffset);
WGPUQuerySet wgpuDeviceCreateQuerySet(WGPUDevice device, const WGPUQuerySetDescriptor* descriptor);
void wgpuQuerySetRelease(WGPUQuerySet querySet);
void wgpuComputePassEncoderSetPipeline(WGPUComputePassEncoder pass, WGPUComputePipeline pipeline);
void wgpuComputePassEncoderSetBindGroup(WGPUComputePassEncoder pass, uint32_t groupIndex, WGPUBindGroup group,
                                        size_t dynamicOffsetCount, const uint32_t* dynamicOffsets);
void wgpuComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder pass, uint32_t x, uint32_t y, uint32_t z);
void wgpuComputePassEncoderEnd(WGPUComputePassEncoder pass);
void wgpuComputePassEncoderRelease(WGPUComputePassEncoder pass);
void wgpuCommandBufferRelease(WGPUCommandBuffer buffer);

}  // extern "C"
