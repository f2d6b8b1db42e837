// The page's WebGPU objects, held by the JavaScript side under integer ids
// (browser_gpu.cpp), as thin calls for the browser runtime. The calls that
// await a promise (opening the device, compiling a pipeline, a read back, a
// wait for the queue) suspend the wasm stack through Asyncify.
#pragma once
#include <string>

namespace forge::gpu::js {

// GPUBufferUsage bits.
inline constexpr int kStorageUsage = 0x80 | 0x04 | 0x08;  // STORAGE | COPY_SRC | COPY_DST
inline constexpr int kUniformUsage = 0x40 | 0x08;         // UNIFORM | COPY_DST

// The adapter and device (opened once): JSON {name, vendor, description,
// fallback, limits: {...}} or {error}; "" outside a browser.
std::string gpu_open();
std::string gpu_lost();          // the device-lost message, "" while alive
std::string gpu_take_errors();   // uncaptured errors since the last call, joined

int gpu_create_buffer(double bytes, int usage);  // -1 on failure
void gpu_destroy_buffer(int id);
void gpu_write_buffer(int id, double offset, const void* src, double bytes);
void gpu_copy(int src, double src_offset, int dst, double dst_offset, double bytes);
void gpu_clear(int id, double offset, double bytes);

struct Created {
  int id;             // -1 on failure
  std::string error;  // the validation message then
};
// A compute pipeline from WGSL `source`; `spec` is JSON {layout: [{binding,
// type}], constants: {name: value}}.
Created gpu_create_pipeline(const std::string& source, const std::string& entry, const std::string& label,
                            const std::string& spec);
// A bind group for a pipeline's layout; `ranges` holds `count` quadruples
// (binding, buffer id, offset, size).
int gpu_bind_group(int pipeline, const double* ranges, int count);
void gpu_release_bind_group(int id);
// Records a dispatch into the open compute pass; slot < 0: no parameters.
void gpu_dispatch(int pipeline, int bind_group, int slot, unsigned x, unsigned y, unsigned z);
void gpu_submit();     // finishes and submits the open encoder
void gpu_wait_idle();  // awaits the queue's submitted work

// A read back: a staging buffer with the copy recorded (submit next), then
// its mapping requested, then awaited and copied to dst (when not null).
int gpu_start_read(int src, double offset, double bytes);
void gpu_map_read(int staging, double bytes);
std::string gpu_finish_read(int staging, void* dst, double bytes);  // "" or the error

}  // namespace forge::gpu::js
