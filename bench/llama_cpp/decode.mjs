#!/usr/bin/env node
// Batch-1 greedy decode speed of llama.cpp (node-llama-cpp's prebuilt CPU
// binary) on a GGUF file, timed the way `forge bench llm` times forge: a
// 16-token prompt, then --tokens new tokens, the first from the prefill and
// the rest one decode step each; one warm-up, then --repeats timed runs.
//
//   node decode.mjs --model FILE [--tokens 128] [--repeats 3] [--threads 2]
//                   [--prompt-ids 1,2,...] [--print-ids] [--json]
import fs from "node:fs";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

function parseArgs(argv) {
  // forge bench llm's prompt: id i = (i * 131 + 7) mod vocab, 16 of them.
  const a = { tokens: 128, repeats: 3, threads: 2, json: false, printIds: false,
    prompt: Array.from({ length: 16 }, (_, i) => i * 131 + 7) };
  for (let i = 0; i < argv.length; i++) {
    const v = () => argv[++i];
    switch (argv[i]) {
      case "--model": a.model = v(); break;
      case "--tokens": a.tokens = Number(v()); break;
      case "--repeats": a.repeats = Number(v()); break;
      case "--threads": a.threads = Number(v()); break;
      case "--prompt-ids": a.prompt = v().split(/[ ,]+/).filter(Boolean).map(Number); break;
      case "--print-ids": a.printIds = true; break;
      case "--json": a.json = true; break;
      default: a.bad = argv[i];
    }
  }
  if (a.bad || !a.model || !(a.tokens >= 2) || !(a.repeats >= 1)) {
    console.error("usage: node decode.mjs --model FILE [--tokens N] [--repeats R] [--threads T] " +
      "[--prompt-ids 1,2,3] [--print-ids] [--json]");
    process.exit(2);
  }
  return a;
}

// One run from an empty KV cache: prefill (prompt in, first token out), then
// tokens - 1 single-token decode steps, each sampled greedily (temperature 0).
async function run(seq, prompt, tokens) {
  await seq.clearHistory();
  const ids = [];
  const t0 = performance.now();
  // yieldEogToken: keep going past <|endoftext|> so every run decodes the same count.
  const gen = seq.evaluate(prompt, { temperature: 0, yieldEogToken: true });
  ids.push((await gen.next()).value);
  const t1 = performance.now();
  while (ids.length < tokens) {
    const r = await gen.next();
    if (r.done) throw new Error(`generation stopped after ${ids.length} tokens`);
    ids.push(r.value);
  }
  const t2 = performance.now();
  await gen.return();
  const steps = tokens - 1;
  return { ids, prefillMs: t1 - t0, decodeTps: steps / ((t2 - t1) / 1e3) };
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const fileBytes = fs.statSync(a.model).size;
  // CPU only, and only the prebuilt binary: never download or compile llama.cpp.
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, progressLogs: false,
    maxThreads: a.threads, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: a.model, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: 1024, sequences: 1,
    threads: { ideal: a.threads, min: a.threads } });
  const seq = context.getSequence();

  const warm = await run(seq, a.prompt, a.tokens);
  const runs = [];
  for (let r = 0; r < a.repeats; r++) runs.push(await run(seq, a.prompt, a.tokens));
  const tps = runs.map((r) => r.decodeTps);
  const best = Math.max(...tps);
  const mean = tps.reduce((s, x) => s + x, 0) / tps.length;
  const result = {
    bench: "llama.cpp decode",
    model: a.model,
    file_bytes: fileBytes,
    threads: context.currentThreads,
    context_size: context.contextSize,
    flash_attention: context.flashAttention,
    prompt_tokens: a.prompt.length,
    decode_tokens: a.tokens - 1,
    prefill_ms: Math.min(...runs.map((r) => r.prefillMs)),
    decode_tokens_per_s: tps,
    best_tokens_per_s: best,
    mean_tokens_per_s: mean,
    // Every decode step reads (nearly) all the weights once: bytes x steps/s.
    best_gb_per_s: (fileBytes * best) / 1e9,
    mean_gb_per_s: (fileBytes * mean) / 1e9,
    // Greedy, so every run must produce the same ids.
    ids_stable: runs.every((r) => r.ids.join() === warm.ids.join()),
  };
  if (a.printIds) result.ids = warm.ids;
  if (a.json) console.log(JSON.stringify(result));
  else {
    console.log(`${a.model}: ${(fileBytes / 1e6).toFixed(1)} MB, ${result.threads} threads, ` +
      `prefill ${result.prompt_tokens} tokens ${result.prefill_ms.toFixed(1)} ms`);
    console.log(`decode ${result.decode_tokens} tokens: ${tps.map((x) => x.toFixed(1)).join(", ")} tok/s ` +
      `(best ${best.toFixed(1)}, mean ${mean.toFixed(1)}; ${result.best_gb_per_s.toFixed(2)} GB/s at best)`);
    if (a.printIds) console.log(`ids: ${warm.ids.join(",")}`);
  }
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

main().catch((e) => { console.error(e?.stack ?? e); process.exit(1); });
