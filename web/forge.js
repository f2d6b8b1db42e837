// forge in the page: an ES module over the wasm build (forge_wasm.js).
//
//   import * as forge from "./forge.js";
//   const m = await forge.load("/models/gpt2-tiny/", {device: "webgpu"});
//   const {ids, text} = await m.generate({promptIds: [1, 2, 3], maxTokens: 24, greedy: true});
//   const {logits, loss} = await m.eval([[1, 2, 3, 4]]);
//   const {losses} = await m.train({inputIds: [[1, 2, 3, 4]], steps: 10, lr: 1e-3, weightDecay: 0.01});
//
// A model is fetched file by file (config.json, the safetensors, and
// tokenizer.json when there is one) into the module's in-memory file system.
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
// hides navigator.gpu from it (tests of the CPU fallback).
export const settings = {disableWebGPU: false};

function wasm() {
  if (!modulePromise) {
    modulePromise = createForgeModule().then((M) => {
      M.forgeDisableWebGPU = settings.disableWebGPU;
      M.forgeOnToken = (h, id, text) => (tokenHooks.get(h) ? tokenHooks.get(h)(id, text) : true);
      M.forgeOnStep = (h, step, loss, gradNorm) => stepHooks.get(h)?.({step, loss, gradNorm});
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
  const reply = JSON.parse(text);
  if (reply.error) throw new Error(reply.error);
  return reply;
}

async function fetchBytes(url, onProgress) {
  const r = await fetch(url);
  if (!r.ok) {
    const e = new Error(`[load] ${url}: HTTP ${r.status}`);
    e.status = r.status;
    throw e;
  }
  const total = Number(r.headers.get("content-length")) || 0;
  if (!r.body || !onProgress) return new Uint8Array(await r.arrayBuffer());
  const parts = [];
  let got = 0;
  for (const reader = r.body.getReader();;) {
    const {done, value} = await reader.read();
    if (done) break;
    parts.push(value);
    got += value.length;
    onProgress({url, loaded: got, total});
  }
  const out = new Uint8Array(got);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
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

// Loads the Hugging Face model folder at `url` (config.json + model.safetensors
// or a sharded index, tokenizer.json optional) on `device`.
export async function load(url, {device = "webgpu", onProgress} = {}) {
  const base = url.endsWith("/") ? url : url + "/";
  const files = {};
  files["config.json"] = await fetchBytes(base + "config.json");
  try {
    const index = await fetchBytes(base + "model.safetensors.index.json");
    files["model.safetensors.index.json"] = index;
    const shards = new Set(Object.values(JSON.parse(new TextDecoder().decode(index)).weight_map));
    for (const s of shards) files[s] = await fetchBytes(base + s, onProgress);
  } catch (e) {
    if (e.status !== 404) throw e;
    files["model.safetensors"] = await fetchBytes(base + "model.safetensors", onProgress);
  }
  for (const optional of ["tokenizer.json", "tokenizer_config.json", "generation_config.json"]) {
    try {
      files[optional] = await fetchBytes(base + optional);
    } catch (e) {
      if (e.status !== 404) throw e;
    }
  }
  return serial(async (M) => {
    const dir = `/models/${nextDir++}`;
    M.FS.mkdirTree(dir);
    for (const [name, bytes] of Object.entries(files)) M.FS.writeFile(`${dir}/${name}`, bytes);
    let fallback = null;
    if (device === "webgpu") {
      const a = JSON.parse(await M.ccall("forge_adapter", "string", [], [], {async: true}));
      if (a.error) {
        fallback = (await webgpuMissing()) || a.error;
        device = "cpu";
      }
    }
    try {
      const reply = await call(M, "forge_open", ["string"], [JSON.stringify({dir, device})]);
      return new Model(reply.handle, reply.info, device, fallback);
    } finally {
      // The model holds its weights; the files are not needed any more.
      for (const name of Object.keys(files)) M.FS.unlink(`${dir}/${name}`);
      M.FS.rmdir(dir);
    }
  });
}

export class Model {
  constructor(handle, info, device, fallback) {
    this.handle = handle;
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
  // -> {losses, gradNorms, stepSeconds}; onStep({step, loss, gradNorm}).
  train({inputIds, steps = 10, lr = 1e-3, weightDecay = 0.01, onStep} = {}) {
    return serial(async (M) => {
      const ids = Array.from(inputIds, (r) => (typeof r === "number" ? r : Array.from(r)));
      if (onStep) stepHooks.set(this.handle, onStep);
      try {
        const args = JSON.stringify({inputIds: ids, steps, lr, weightDecay});
        return await call(M, "forge_train", ["number", "string"], [this.handle, args]);
      } finally {
        stepHooks.delete(this.handle);
      }
    });
  }

  encode(text) {
    return serial(async (M) => (await call(M, "forge_encode", ["number", "string"], [this.handle, text])).ids);
  }

  decode(ids) {
    return serial(async (M) =>
      (await call(M, "forge_decode", ["number", "string"], [this.handle, JSON.stringify(Array.from(ids))])).text);
  }

  close() {
    return serial(async (M) => call(M, "forge_close", ["number"], [this.handle]));
  }
}
