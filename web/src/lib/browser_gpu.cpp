// browser_gpu.h on navigator.gpu. State lives in Module.forgeGpu: the device,
// objects by id, the open command encoder and compute pass, uncaptured
// errors. Strings come back malloc'ed (forge_js_reply) and are freed here.
#include "browser_gpu.h"

#include <emscripten.h>

#include <cstdlib>

namespace forge::gpu::js {

namespace {

EM_JS(void, forge_gpu_prelude, (), {
  if (Module.forgeReply) return;
  Module.forgeReply = function(s) {
    const n = lengthBytesUTF8(s) + 1;
    const p = _malloc(n);
    stringToUTF8(s, p, n);
    return p;
  };
  Module.forgeEncoder = function(G) {
    if (!G.encoder) G.encoder = G.device.createCommandEncoder();
    return G.encoder;
  };
  Module.forgeEndPass = function(G) {
    if (G.pass) {
      G.pass.end();
      G.pass = null;
    }
  };
});

EM_ASYNC_JS(char*, forge_gpu_open, (), {
  const reply = (o) => Module.forgeReply(JSON.stringify(o));
  try {
    if (Module.forgeGpu) return reply(Module.forgeGpu.info);
    if (Module.forgeDisableWebGPU || typeof navigator === "undefined" || !navigator.gpu)
      return reply({error : "this browser has no navigator.gpu"});
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return reply({error : "navigator.gpu.requestAdapter() found no adapter"});
    const requiredLimits = {};
    for (const k in adapter.limits) {
      if (typeof adapter.limits[k] === "number") requiredLimits[k] = adapter.limits[k];
    }
    const device = await adapter.requestDevice({requiredLimits});
    const info = adapter.info || {};
    const G = {device, queue : device.queue, objects : new Map(), next : 1, errors : [], lost : "",
               encoder : null, pass : null, maps : new Map()};
    device.onuncapturederror = (e) => G.errors.push(e.error.message);
    device.lost.then((i) => { if (i.reason !== "destroyed") G.lost = i.message || "lost"; });
    const limits = {};
    for (const k in device.limits) {
      if (typeof device.limits[k] === "number") limits[k] = device.limits[k];
    }
    const parts = [ info.vendor, info.architecture, info.device ].filter((x) => x);
    G.info = {name : info.description || parts.join(" ") || "WebGPU adapter",
              vendor : info.vendor || "", description : info.description || "",
              fallback : !!(adapter.isFallbackAdapter || info.isFallbackAdapter),
              software : /swiftshader|llvmpipe|lavapipe/i.test(parts.join(" ") + " " + (info.description || "")),
              limits};
    Module.forgeGpu = G;
    return reply(G.info);
  } catch (e) {
    return reply({error : String(e && e.message || e)});
  }
});

EM_JS(char*, forge_gpu_lost, (), { return Module.forgeReply(Module.forgeGpu ? Module.forgeGpu.lost : ""); });

EM_JS(char*, forge_gpu_take_errors, (), {
  const G = Module.forgeGpu;
  const s = G ? G.errors.join("; ") : "";
  if (G) G.errors = [];
  return Module.forgeReply(s);
});

EM_JS(int, forge_gpu_create_buffer, (double bytes, int usage), {
  const G = Module.forgeGpu;
  try {
    const b = G.device.createBuffer({size : bytes, usage});
    const id = G.next++;
    G.objects.set(id, b);
    return id;
  } catch (e) {
    G.errors.push(String(e.message || e));
    return -1;
  }
});

EM_JS(void, forge_gpu_destroy_buffer, (int id), {
  const G = Module.forgeGpu;
  const b = G.objects.get(id);
  if (b) b.destroy();
  G.objects.delete(id);
});

EM_JS(void, forge_gpu_write_buffer, (int id, double offset, const void* src, double bytes), {
  const G = Module.forgeGpu;
  G.queue.writeBuffer(G.objects.get(id), offset, HEAPU8, src, bytes);
});

EM_JS(void, forge_gpu_copy, (int src, double src_offset, int dst, double dst_offset, double bytes), {
  const G = Module.forgeGpu;
  Module.forgeEndPass(G);
  Module.forgeEncoder(G).copyBufferToBuffer(G.objects.get(src), src_offset, G.objects.get(dst), dst_offset, bytes);
});

EM_JS(void, forge_gpu_clear, (int id, double offset, double bytes), {
  const G = Module.forgeGpu;
  Module.forgeEndPass(G);
  Module.forgeEncoder(G).clearBuffer(G.objects.get(id), offset, bytes);
});

// The pipeline's id, or -1 with the message in G.lastError.
EM_ASYNC_JS(int, forge_gpu_create_pipeline, (const char* source, const char* entry, const char* label,
                                             const char* spec), {
  const G = Module.forgeGpu;
  const s = JSON.parse(UTF8ToString(spec));
  const name = UTF8ToString(label);
  G.device.pushErrorScope("validation");
  let made = null;
  try {
    const module = G.device.createShaderModule({code : UTF8ToString(source), label : name});
    const entries = s.layout.map((b) => ({binding : b.binding, visibility : GPUShaderStage.COMPUTE,
                                          buffer : {type : b.type, hasDynamicOffset : b.type === "uniform"}}));
    const layout = G.device.createBindGroupLayout({entries, label : name});
    const pipeline = G.device.createComputePipeline({
      label : name,
      layout : G.device.createPipelineLayout({bindGroupLayouts : [layout]}),
      compute : {module, entryPoint : UTF8ToString(entry), constants : s.constants}
    });
    made = {pipeline, layout};
  } catch (e) {
    G.lastError = String(e.message || e);
  }
  const err = await G.device.popErrorScope();
  if (err) G.lastError = err.message;
  if (err || !made) return -1;
  const id = G.next++;
  G.objects.set(id, made);
  return id;
});

EM_JS(char*, forge_gpu_last_error, (), { return Module.forgeReply(Module.forgeGpu.lastError || ""); });

EM_JS(int, forge_gpu_bind_group, (int pipeline, const double* ranges, int count), {
  const G = Module.forgeGpu;
  const f = HEAPF64.subarray(ranges >> 3, (ranges >> 3) + count * 4);
  const entries = [];
  for (let i = 0; i < count; ++i) {
    entries.push({binding : f[i * 4],
                  resource : {buffer : G.objects.get(f[i * 4 + 1]), offset : f[i * 4 + 2], size : f[i * 4 + 3]}});
  }
  const bg = G.device.createBindGroup({layout : G.objects.get(pipeline).layout, entries});
  const id = G.next++;
  G.objects.set(id, bg);
  return id;
});

EM_JS(void, forge_gpu_release, (int id), { Module.forgeGpu.objects.delete(id); });

EM_JS(void, forge_gpu_dispatch, (int pipeline, int bind_group, int slot, unsigned x, unsigned y, unsigned z), {
  const G = Module.forgeGpu;
  if (!G.pass) G.pass = Module.forgeEncoder(G).beginComputePass();
  G.pass.setPipeline(G.objects.get(pipeline).pipeline);
  G.pass.setBindGroup(0, G.objects.get(bind_group), slot >= 0 ? [slot] : []);
  G.pass.dispatchWorkgroups(x, y, z);
});

EM_JS(void, forge_gpu_submit, (), {
  const G = Module.forgeGpu;
  Module.forgeEndPass(G);
  if (G.encoder) {
    G.queue.submit([G.encoder.finish()]);
    G.encoder = null;
  }
});

EM_ASYNC_JS(void, forge_gpu_wait_idle, (), { await Module.forgeGpu.queue.onSubmittedWorkDone(); });

EM_JS(int, forge_gpu_start_read, (int src, double offset, double bytes), {
  const G = Module.forgeGpu;
  const size = Math.max(4, Math.ceil(bytes / 4) * 4);
  const staging = G.device.createBuffer({size, usage : GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
  const id = G.next++;
  G.objects.set(id, staging);
  Module.forgeEndPass(G);
  Module.forgeEncoder(G).copyBufferToBuffer(G.objects.get(src), offset, staging, 0, size);
  return id;
});

EM_JS(void, forge_gpu_map_read, (int staging, double bytes), {
  const G = Module.forgeGpu;
  const p = G.objects.get(staging).mapAsync(GPUMapMode.READ).then(() => "", (e) => String(e.message || e));
  G.maps.set(staging, p);
});

EM_ASYNC_JS(char*, forge_gpu_finish_read, (int staging, void* dst, double bytes), {
  const G = Module.forgeGpu;
  const b = G.objects.get(staging);
  let error = await G.maps.get(staging);
  G.maps.delete(staging);
  if (!error && dst) HEAPU8.set(new Uint8Array(b.getMappedRange(), 0, bytes), dst);
  if (!error) b.unmap();
  b.destroy();
  G.objects.delete(staging);
  return Module.forgeReply(error);
});

std::string take(char* p) {
  std::string s = p ? p : "";
  std::free(p);
  return s;
}

}  // namespace

std::string gpu_open() {
  forge_gpu_prelude();
  return take(forge_gpu_open());
}
std::string gpu_lost() { return take(forge_gpu_lost()); }
std::string gpu_take_errors() { return take(forge_gpu_take_errors()); }
int gpu_create_buffer(double bytes, int usage) { return forge_gpu_create_buffer(bytes, usage); }
void gpu_destroy_buffer(int id) { forge_gpu_destroy_buffer(id); }
void gpu_write_buffer(int id, double offset, const void* src, double bytes) {
  forge_gpu_write_buffer(id, offset, src, bytes);
}
void gpu_copy(int src, double src_offset, int dst, double dst_offset, double bytes) {
  forge_gpu_copy(src, src_offset, dst, dst_offset, bytes);
}
void gpu_clear(int id, double offset, double bytes) { forge_gpu_clear(id, offset, bytes); }
Created gpu_create_pipeline(const std::string& source, const std::string& entry, const std::string& label,
                            const std::string& spec) {
  const int id = forge_gpu_create_pipeline(source.c_str(), entry.c_str(), label.c_str(), spec.c_str());
  return {id, id < 0 ? take(forge_gpu_last_error()) : std::string()};
}
int gpu_bind_group(int pipeline, const double* ranges, int count) { return forge_gpu_bind_group(pipeline, ranges, count); }
void gpu_release_bind_group(int id) { forge_gpu_release(id); }
void gpu_dispatch(int pipeline, int bind_group, int slot, unsigned x, unsigned y, unsigned z) {
  forge_gpu_dispatch(pipeline, bind_group, slot, x, y, z);
}
void gpu_submit() { forge_gpu_submit(); }
void gpu_wait_idle() { forge_gpu_wait_idle(); }
int gpu_start_read(int src, double offset, double bytes) { return forge_gpu_start_read(src, offset, bytes); }
void gpu_map_read(int staging, double bytes) { forge_gpu_map_read(staging, bytes); }
std::string gpu_finish_read(int staging, void* dst, double bytes) {
  return take(forge_gpu_finish_read(staging, dst, bytes));
}

}  // namespace forge::gpu::js
