// Weights stream to the device: a model whose f32 weights are larger than the
// wasm heap may grow to loads on WebGPU and generates the native CLI's greedy
// ids, in Debian's Chromium (headless, WebGPU on SwiftShader).
//  - a random Llama-family folder (f32, `forge init --config`) of MODEL_MB;
//  - the page's heap capped at HEAP_CAP (?maxheap=, forge.js
//    settings.maxHeapBytes), below the model's size;
//  - 6 greedy ids on WebGPU equal `forge generate --greedy` on the same folder,
//    and the logits of a 5-token input `forge eval --output`'s within
//    LOGIT_TOL (a random model's logits are ~0.3: a tensor read wrong or
//    misplaced moves them by as much);
//  - the heap's growth during the load stays below half the weights (prints
//    the heap before and after beside the model's size);
//  - on the CPU path, whose weights live in the heap, the same model is a
//    clear error before loading, and the page's module stays usable.
//
// node tests/web/stream.test.mjs (scripts/test-web.sh builds what it needs).
import {execFileSync} from "node:child_process";
import {mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {launch, openPage, root, startServer} from "./harness.mjs";

const forgeBin = process.env.FORGE_BIN || join(root, "build", "forge");
const HEAP_CAP = 24 << 20;  // the module starts with 16 MiB
const PROMPT = [3, 141, 59, 26, 5];
// |webgpu - native cpu|: f32 sums of up to 1024 terms in other orders.
const LOGIT_TOL = 1e-3;

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}
// A safetensors file as {name: {dtype, shape, data (Buffer)}}.
function readSafetensors(path) {
  const b = readFileSync(path);
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString());
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name !== "__metadata__") out[name] = {...t, data: b.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1])};
  }
  return out;
}

// input_ids i32 [1, T] as forge eval --input reads them.
function writeIds(path, ids) {
  const header = Buffer.from(JSON.stringify({input_ids: {dtype: "I32", shape: [1, ids.length],
                                                         data_offsets: [0, 4 * ids.length]}}));
  const h = Buffer.concat([header, Buffer.alloc((8 - (header.length % 8)) % 8, " ")]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  writeFileSync(path, Buffer.concat([len, h, Buffer.from(Int32Array.from(ids).buffer)]));
}

const mb = (n) => `${(n / (1 << 20)).toFixed(1)} MiB`;

// 6 layers of hidden 256 and an untied 4096-token vocabulary: 30 MiB of f32,
// no tensor above 4 MiB (small: SwiftShader reads weights at a few MB/s).
const config = {
  architectures: ["LlamaForCausalLM"], model_type: "llama", hidden_act: "silu", hidden_size: 256,
  intermediate_size: 1024, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, num_hidden_layers: 6,
  vocab_size: 4096, max_position_embeddings: 128, rms_norm_eps: 1e-5, rope_theta: 10000.0,
  tie_word_embeddings: false, attention_bias: false, mlp_bias: false, bos_token_id: 1, eos_token_id: 2,
};

const started = Date.now();
const tmp = mkdtempSync(join(tmpdir(), "forge-web-stream-"));
const dir = join(tmp, "wide");
writeFileSync(join(tmp, "config.json"), JSON.stringify(config));
execFileSync(forgeBin, ["init", "--config", join(tmp, "config.json"), "--out", dir, "--seed", "7"],
             {stdio: ["ignore", "ignore", "inherit"]});
const modelBytes = statSync(join(dir, "model.safetensors")).size;
const native = JSON.parse(execFileSync(forgeBin, ["generate", "--model", dir, "--prompt-ids", PROMPT.join(","), "-n",
                                                  "6", "--greedy", "--json", "--device", "cpu"],
                                       {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"]})
                              .trim().split("\n").at(-1)).ids;
writeIds(join(tmp, "ids.safetensors"), PROMPT);
execFileSync(forgeBin, ["eval", "--model", dir, "--input", join(tmp, "ids.safetensors"), "--output",
                        join(tmp, "logits.safetensors"), "--device", "cpu"], {stdio: ["ignore", "ignore", "inherit"]});
const logits = readSafetensors(join(tmp, "logits.safetensors")).logits;
const nativeLogits = new Float32Array(logits.data.buffer.slice(logits.data.byteOffset,
                                                               logits.data.byteOffset + logits.data.length));
check(modelBytes > HEAP_CAP, `the model's weights (${mb(modelBytes)}) exceed the heap's cap (${mb(HEAP_CAP)})`);

const phase = (what) => console.log(`     ${what} at ${((Date.now() - started) / 1000).toFixed(1)} s`);
phase("native references");
const server = await startServer(tmp);
const browser = await launch({webgpu: true});
try {
  const page = await openPage(browser, `${server.url}?maxheap=${HEAP_CAP}`);
  phase("page ready");
  page.on("console", (m) => m.text().startsWith("generate ") && console.log(`     ${m.text()}`));
  const gpu = await page.evaluate(async (prompt) => {
    const before = await window.forge.heapBytes();
    const t0 = performance.now();
    try {
      const m = await window.forge.load("/models/wide/", {device: "webgpu", cache: false});
      const loadSeconds = (performance.now() - t0) / 1000;
      const after = await window.forge.heapBytes();
      const t1 = performance.now();
      const g = await m.generate({promptIds: prompt, maxTokens: 6, greedy: true});
      const t2 = performance.now();
      const e = await m.eval([prompt]);
      console.log(`generate ${((t2 - t1) / 1000).toFixed(2)} s, eval ${((performance.now() - t2) / 1000).toFixed(2)} s`);
      await m.close();
      return {ids: g.ids, logits: Array.from(e.logits), device: m.device, before, after, loadSeconds};
    } catch (e) {
      return {error: String(e.message || e), before, after: await window.forge.heapBytes()};
    }
  }, PROMPT);

  check(!gpu.error && gpu.device === "webgpu", `loads on WebGPU under the cap${gpu.error ? `: ${gpu.error}` : ""}`);
  check(JSON.stringify(gpu.ids) === JSON.stringify(native), `6 greedy ids equal the native CLI's (${native})`);
  let maxDiff = gpu.logits?.length === nativeLogits.length ? 0 : Infinity, maxRef = 0;
  for (let i = 0; i < nativeLogits.length && gpu.logits; i++) {
    maxDiff = Math.max(maxDiff, Math.abs(gpu.logits[i] - nativeLogits[i]));
    maxRef = Math.max(maxRef, Math.abs(nativeLogits[i]));
  }
  check(maxDiff <= LOGIT_TOL, `logits [1, ${PROMPT.length}, ${config.vocab_size}] as forge eval's: ` +
                              `max |diff| ${maxDiff.toExponential(2)} (max |logit| ${maxRef.toFixed(3)})`);
  console.log(`     heap ${mb(gpu.before)} before the load, ${mb(gpu.after)} after (cap ${mb(HEAP_CAP)}); ` +
              `weights ${mb(modelBytes)}; load ${gpu.loadSeconds?.toFixed(2)} s`);
  check(gpu.after - gpu.before < modelBytes / 2,
        `the heap grew by ${mb(gpu.after - gpu.before)} for ${mb(modelBytes)} of weights (less than half)`);

  // The CPU path holds the weights in the heap: a model past its room is a
  // clear error up front, and the module stays usable (a WebGPU load after it).
  const cpu = await page.evaluate(async (prompt) => {
    let error = "";
    try {
      await window.forge.load("/models/wide/", {device: "cpu", cache: false});
    } catch (e) {
      error = String(e.message || e);
    }
    try {
      const m = await window.forge.load("/models/wide/", {device: "webgpu", cache: false});
      const g = await m.generate({promptIds: prompt, maxTokens: 2, greedy: true});
      await m.close();
      return {error, ids: g.ids};
    } catch (e) {
      return {error, after: String(e.message || e)};
    }
  }, PROMPT);
  check(/on the CPU the weights take .* of the wasm heap/.test(cpu.error),
        `the CPU path refuses a model larger than the heap's room: ${cpu.error || "no error"}`);
  check(JSON.stringify(cpu.ids) === JSON.stringify(native.slice(0, 2)),
        `the module stays usable: a WebGPU load after it generates ${cpu.ids ?? cpu.after}`);

} finally {
  await browser.close();
  server.proc.kill();
  rmSync(tmp, {recursive: true, force: true});
}
console.log(`stream test: ${failures ? `${failures} FAILED` : "all passed"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failures ? 1 : 0);
