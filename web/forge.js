// forge in the page: an ES module over the wasm build (forge_wasm.js).
//
//   import * as forge from "./forge.js";
//   const m = await forge.load("/models/gpt2-tiny/", {device: "webgpu"});
//   const {ids, text} = await m.generate({promptIds: [1, 2, 3], maxTokens: 24, greedy: true});
//   const {logits, loss} = await m.eval([[1, 2, 3, 4]]);
//   const {losses} = await m.train({inputIds: [[1, 2, 3, 4]], steps: 10, lr: 1e-3, weightDecay: 0.01});
//
// A model is fetched file by file (config.json, the safetensors, the
// tokenizer and chat template when there are) through the Cache API (a second
// load stays off the network), or read from the user's disk (loadFiles). The
// small files go to the module's in-memory file system; the safetensors stay
// Blobs outside the wasm heap, which the loader reads one tensor at a time
// into the device's buffers, so the heap never holds a whole model.
// device "webgpu" falls back to "cpu" (the wasm kernels) when the browser has
// no WebGPU adapter; the model's `device` and `fallback` say which ran.
// Calls run one at a time (the wasm stack suspends on the page's promises).
import createForgeModule from "./forge_wasm.js";

let modulePromise = null;
let queue = Promise.resolve();
let nextDir = 1;
const tokenHooks = new Map();  // handle -> onToken
const stepHooks = new Map();   // handle -> onStep

// Options for the module before it first loads: {disableWebGPU: true}
// hides navigator.gpu from it (tests of the CPU fallback); maxHeapBytes caps
// its heap (0: the build's 4 GiB).
export const settings = {disableWebGPU: false, maxHeapBytes: 0};

const PAGE = 65536;
const INITIAL_HEAP = 16 << 20;  // the build's INITIAL_MEMORY

function wasm() {
  if (!modulePromise) {
    const options = {};
    if (settings.maxHeapBytes)
      options.wasmMemory = new WebAssembly.Memory({initial: INITIAL_HEAP / PAGE,
                                                   maximum: Math.max(INITIAL_HEAP, settings.maxHeapBytes) / PAGE});
    modulePromise = createForgeModule(options).then((M) => {
      M.forgeFiles = new Map();  // path in a model's folder -> Blob (web/src/page_files.h)
      M.forgeDisableWebGPU = settings.disableWebGPU;
      M.forgeOnToken = (h, id, text) => (tokenHooks.get(h) ? tokenHooks.get(h)(id, text) : true);
      M.forgeOnStep = (h, step, loss, gradNorm) => (stepHooks.get(h) ? stepHooks.get(h)({step, loss, gradNorm}) : true);
      return M;
    });
  }
  return modulePromise;
}

// Runs fn(M) after every earlier call has finished.
function serial(fn) {
  const run = queue.then(async () => fn(await wasm()));
  queue = run.catch(() => {});
  return run;
}

async function call(M, name, types, args) {
  const text = await M.ccall(name, "string", types, args, {async: true});
  // No reply at all: Asyncify found no heap left for its 1 MiB of saved stack
  // (a model on the CPU path larger than the heap's maximum).
  if (!text) throw new Error(`[web] ${name} gave no reply: the wasm heap is full (${M.HEAP8.length} bytes)`);
  const reply = JSON.parse(text);
  if (reply.error) throw new Error(reply.error);
  return reply;
}

// Model files are kept in the Cache API (cache "forge-models", by URL), so a
// second load of a folder does not touch the network; clearCache() empties it.
const CACHE = "forge-models";

async function openCache() {
  try {
    return typeof caches === "undefined" ? null : await caches.open(CACHE);
  } catch {
    return null;  // an opaque origin or a browser without the Cache API: no cache
  }
}

export async function clearCache() {
  if (typeof caches !== "undefined") await caches.delete(CACHE);
}

// The file at `url` as a Blob (the browser keeps a large one out of the page's
// memory, and the wasm heap never sees it whole), counted by onProgress.
async function fetchBlob(url, onProgress, cache = null) {
  const hit = cache && (await cache.match(url));
  if (hit) {
    const blob = await hit.blob();
    onProgress?.({url, loaded: blob.size, total: blob.size, cached: true});
    return blob;
  }
  const r = await fetch(url);
  if (!r.ok) {
    const e = new Error(`[load] ${url}: HTTP ${r.status}`);
    e.status = r.status;
    throw e;
  }
  const total = Number(r.headers.get("content-length")) || 0;
  let body = r.body;
  if (body && onProgress) {
    let got = 0;
    body = body.pipeThrough(new TransformStream({transform(chunk, c) {
      got += chunk.length;
      onProgress({url, loaded: got, total, cached: false});
      c.enqueue(chunk);
    }}));
  }
  const blob = await new Response(body).blob();
  if (cache) {
    try {
      await cache.put(url, new Response(blob, {headers: {"content-type": "application/octet-stream"}}));
      const stored = await cache.match(url);
      if (stored) return await stored.blob();  // the cache's copy, on disk
    } catch {
      // a full quota: the model still loads, uncached
    }
  }
  return blob;
}

// A small file (config, tokenizer, template) as bytes for the module's file system.
async function fetchBytes(url, cache = null) {
  return new Uint8Array(await (await fetchBlob(url, null, cache)).arrayBuffer());
}

// A 404 marker the cache keeps too, so an absent optional file is not asked
// for again: an empty body under "URL?forge-absent" (the cache ignores a
// fragment, so a "#" key would be the file's own).
async function fetchOptional(url, cache) {
  const absent = url + "?forge-absent";
  if (cache && (await cache.match(absent))) return null;
  try {
    return await fetchBytes(url, cache);
  } catch (e) {
    if (e.status !== 404) throw e;
    if (cache) await cache.put(absent, new Response(new Uint8Array(0))).catch(() => {});
    return null;
  }
}

// Why the page cannot have WebGPU, in the browser's terms (null: it can).
async function webgpuMissing() {
  if (settings.disableWebGPU) return "WebGPU is turned off for this page";
  if (typeof navigator === "undefined" || !navigator.gpu) return "this browser has no navigator.gpu";
  try {
    if (!(await navigator.gpu.requestAdapter())) return "navigator.gpu.requestAdapter() found no adapter";
  } catch (e) {
    return String(e.message || e);
  }
  return null;
}

// The adapter of forge's WebGPU device: {available, name, type, ...} or
// {available: false, error}.
export function adapter() {
  return serial(async (M) => {
    const reply = JSON.parse(await M.ccall("forge_adapter", "string", [], [], {async: true}));
    return reply.error ? {available: false, error: (await webgpuMissing()) || reply.error} : reply;
  });
}

// The files a model folder may hold beside its weights.
const OPTIONAL = ["tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja",
                  "special_tokens_map.json"];

// Loads the Hugging Face (or MLX) model folder at `url` (config.json +
// model.safetensors or a sharded index, tokenizer and chat template optional)
// on `device`. {cache: false} neither reads nor fills the Cache API.
export async function load(url, {device = "webgpu", onProgress, cache = true} = {}) {
  const base = new URL(url.endsWith("/") ? url : url + "/", location.href).href;
  const store = cache ? await openCache() : null;
  const files = {};
  files["config.json"] = await fetchBytes(base + "config.json", store);
  const index = await fetchOptional(base + "model.safetensors.index.json", store);
  if (index) {
    files["model.safetensors.index.json"] = index;
    const shards = new Set(Object.values(JSON.parse(new TextDecoder().decode(index)).weight_map));
    for (const s of shards) files[s] = await fetchBlob(base + s, onProgress, store);
  } else {
    files["model.safetensors"] = await fetchBlob(base + "model.safetensors", onProgress, store);
  }
  for (const name of OPTIONAL) {
    const bytes = await fetchOptional(base + name, store);
    if (bytes) files[name] = bytes;
  }
  return open(files, device);
}

// Loads a model folder from the user's disk: `files` is what an <input
// type="file" webkitdirectory> gives (a FileList or File[]; paths below the
// picked folder are dropped, so MLX and Hugging Face folders both work).
export async function loadFiles(files, {device = "webgpu", onProgress} = {}) {
  const wanted = /^(config\.json|.*\.safetensors|model\.safetensors\.index\.json|tokenizer\.json|tokenizer_config\.json|generation_config\.json|chat_template\.jinja|special_tokens_map\.json)$/;
  const list = Array.from(files);
  const total = list.reduce((n, f) => n + (wanted.test(f.name) ? f.size : 0), 0);
  const out = {};
  let loaded = 0;
  for (const f of list) {
    if (!wanted.test(f.name)) continue;
    // A File is a Blob: the weights are read from disk a tensor at a time.
    out[f.name] = f.name.endsWith(".safetensors") ? f : new Uint8Array(await f.arrayBuffer());
    loaded += f.size;
    onProgress?.({url: f.name, loaded, total, cached: false});
  }
  if (!out["config.json"]) throw new Error("[load] the folder has no config.json (pick a Hugging Face or MLX model folder)");
  return open(out, device);
}

// files {name: bytes, or a Blob for the weights} -> a Model on `device`
// (WebGPU falling back to the CPU).
function open(files, device) {
  return serial(async (M) => {
    const dir = `/models/${nextDir++}`;
    M.FS.mkdirTree(dir);
    const blobs = [];
    for (const [name, data] of Object.entries(files)) {
      if (data instanceof Blob) {
        M.forgeFiles.set(`${dir}/${name}`, data);
        blobs.push(`${dir}/${name}`);
      } else {
        M.FS.writeFile(`${dir}/${name}`, data);
      }
    }
    let fallback = null;
    if (device === "webgpu") {
      const a = JSON.parse(await M.ccall("forge_adapter", "string", [], [], {async: true}));
      if (a.error) {
        fallback = (await webgpuMissing()) || a.error;
        device = "cpu";
      }
    }
    // The weights are on the device once forge_open returns; the small files
    // stay for exports.
    try {
      if (device === "cpu") await checkHeapRoom(M, files);
      const reply = await call(M, "forge_open", ["string"], [JSON.stringify({dir, device})]);
      return new Model(reply.handle, reply.info, device, fallback, dir);
    } catch (e) {
      removeTree(M, dir);
      throw e;
    } finally {
      for (const path of blobs) M.forgeFiles.delete(path);
    }
  });
}

// The CPU path holds every weight in the heap, in f32: refused up front when
// they cannot fit under the heap's maximum, before a load that would run it
// out and leave the module unusable (Asyncify cannot save a stack then).
const HEAP_MAX = 4 * 1024 * 1024 * 1024;  // the build's MAXIMUM_MEMORY
async function checkHeapRoom(M, files) {
  let need = 0;
  for (const data of Object.values(files)) {
    if (!(data instanceof Blob)) continue;
    if (data.size < 8) continue;  // forge_open names the malformed file
    const n = Number(new DataView(await data.slice(0, 8).arrayBuffer()).getBigUint64(0, true));
    if (n <= 0 || 8 + n > data.size) continue;
    let header;
    try {
      header = JSON.parse(new TextDecoder().decode(await data.slice(8, 8 + n).arrayBuffer()));
    } catch {
      continue;
    }
    for (const [name, t] of Object.entries(header)) {
      if (name === "__metadata__" || !Array.isArray(t?.data_offsets)) continue;
      const bytes = Number(t.data_offsets[1]) - Number(t.data_offsets[0]);
      need += t.dtype === "BF16" || t.dtype === "F16" ? 2 * bytes : bytes;  // widened to f32
    }
  }
  const max = settings.maxHeapBytes ? Math.max(INITIAL_HEAP, settings.maxHeapBytes) : HEAP_MAX;
  const room = max - M.HEAP8.length;
  if (need > room)
    throw new Error(`[load] on the CPU the weights take ${mib(need)} of the wasm heap, which has ${mib(room)} ` +
                    `left of its ${mib(max)} maximum: load the model on WebGPU, or a quantized or smaller one`);
}

const mib = (n) => `${(n / (1 << 20)).toFixed(1)} MiB`;

function removeTree(M, dir) {
  if (!M.FS.analyzePath(dir).exists) return;
  for (const name of M.FS.readdir(dir)) {
    if (name === "." || name === "..") continue;
    const p = `${dir}/${name}`;
    if (M.FS.isDir(M.FS.stat(p).mode)) removeTree(M, p);
    else M.FS.unlink(p);
  }
  M.FS.rmdir(dir);
}

// The module's heap in bytes: its largest size so far, as a wasm heap grows
// and never shrinks (what loading a model cost it, at most).
export function heapBytes() {
  return serial(async (M) => M.HEAP8.length);
}

// The op parity rows (matmul, softmax, layernorm, rms_norm, attention) on the
// page's WebGPU against its CPU path: [{op, shape, maxAbs, maxRef, size}].
export function opParity() {
  return serial(async (M) => (await call(M, "forge_op_parity", [], [])).results);
}

export class Model {
  constructor(handle, info, device, fallback, dir) {
    this.handle = handle;
    this.dir = dir;          // its small files in the module's file system
    this.info = info;        // family, vocabSize, contextLength, parameters, tokenizer, ...
    this.device = device;    // "webgpu" or "cpu": where it runs
    this.fallback = fallback;  // why WebGPU was not used, or null
  }

  // -> {ids, text, tokensPerSecond}; onToken(id, textPiece) per token
  // (returning false stops).
  generate({promptIds, prompt, maxTokens = 32, greedy, temperature, topK, topP, seed, onToken} = {}) {
    const args = {maxTokens};
    if (promptIds) args.promptIds = Array.from(promptIds);
    else args.prompt = prompt;
    if (greedy !== undefined) args.greedy = greedy;
    if (temperature !== undefined) args.temperature = temperature;
    if (topK !== undefined) args.topK = topK;
    if (topP !== undefined) args.topP = topP;
    if (seed !== undefined) args.seed = seed;
    return serial(async (M) => {
      if (onToken) tokenHooks.set(this.handle, onToken);
      try {
        return await call(M, "forge_generate", ["number", "string"], [this.handle, JSON.stringify(args)]);
      } finally {
        tokenHooks.delete(this.handle);
      }
    });
  }

  // inputIds [B][T] or [T] -> {logits: Float32Array [B * T * V], shape, loss}.
  eval(inputIds) {
    return serial(async (M) => {
      const ids = Array.from(inputIds, (r) => (typeof r === "number" ? r : Array.from(r)));
      const reply = await call(M, "forge_eval", ["number", "string"], [this.handle, JSON.stringify({inputIds: ids})]);
      const ptr = M._forge_logits_ptr(), len = M._forge_logits_len();
      reply.logits = new Float32Array(M.HEAPF32.buffer, ptr, len).slice();
      return reply;
    });
  }

  // As `forge train --fixed-batch`: `steps` AdamW steps on inputIds [B][T]
  // -> {losses, gradNorms, stepSeconds, paused, stepsDone}; onStep({step,
  // loss, gradNorm}). lora {rank, alpha, targets, rslora, seed} trains a
  // fresh adapter (the base frozen) as `--lora-rank` does. pause() (or onStep
  // returning false) stops after the current step with paused: true;
  // train({inputIds, steps, resume: true}) continues that run (same optimizer
  // state), so pausing does not change the losses.
  train({inputIds, steps = 10, lr = 1e-3, weightDecay = 0.01, lora, resume = false, onStep} = {}) {
    return serial(async (M) => {
      const ids = Array.from(inputIds, (r) => (typeof r === "number" ? r : Array.from(r)));
      this.pauseRequested = false;
      stepHooks.set(this.handle, (s) => onStep?.(s) !== false && !this.pauseRequested);
      try {
        const args = JSON.stringify({inputIds: ids, steps, lr, weightDecay, lora: lora || null, resume});
        return await call(M, "forge_train", ["number", "string"], [this.handle, args]);
      } finally {
        stepHooks.delete(this.handle);
      }
    });
  }

  // Asks a running train() to stop after its current step.
  pause() {
    this.pauseRequested = true;
  }

  // The trained result as files {name: Uint8Array}: kind "adapter" (a LoRA
  // adapter, PEFT layout: adapter_config.json, adapter_model.safetensors) or
  // "model" (a Llama-family model, Hugging Face layout, f32), as native
  // `forge train --fixed-batch --out` writes them.
  export({kind = "adapter"} = {}) {
    return serial(async (M) => {
      const dir = `/export/${nextDir++}`;
      M.FS.mkdirTree(dir);
      try {
        const reply = await call(M, "forge_export", ["number", "string"], [this.handle, JSON.stringify({kind, dir})]);
        const files = {};
        for (const name of reply.files) files[name] = M.FS.readFile(`${dir}/${name}`);
        return files;
      } finally {
        removeTree(M, dir);
      }
    });
  }

  // messages [{role, content}] through the model's chat template -> {text,
  // ids} (ids when it has a tokenizer: what generate({promptIds}) takes);
  // extra: the template's other variables (tools, date_string, ...).
  chatPrompt(messages, {addGenerationPrompt = true, extra = {}} = {}) {
    return serial(async (M) => call(M, "forge_chat_prompt", ["number", "string"],
                                    [this.handle, JSON.stringify({messages, addGenerationPrompt, extra})]));
  }

  encode(text) {
    return serial(async (M) => (await call(M, "forge_encode", ["number", "string"], [this.handle, text])).ids);
  }

  decode(ids) {
    return serial(async (M) =>
      (await call(M, "forge_decode", ["number", "string"], [this.handle, JSON.stringify(Array.from(ids))])).text);
  }

  close() {
    return serial(async (M) => {
      const r = await call(M, "forge_close", ["number"], [this.handle]);
      removeTree(M, this.dir);
      return r;
    });
  }
}
