#!/usr/bin/env node
// llama.cpp beside forge on the same GPT-2 weights, CPU decode tokens/s.
// Runs alternate (llama.cpp q8_0, forge q8, llama.cpp f32, forge f32, then the
// next round) so that drift in memory bandwidth or load hits both sides alike.
// Both report the best of 3 timed runs after a warm-up, 16-token prompt.
//
//   node compare.mjs --forge BIN --llama-q8 Q8_0.gguf --forge-q8 DIR
//                    --llama-f32 F32.gguf --forge-f32 DIR [--rounds 3] [--tokens 128] [--json]
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const a = { forge: path.join(here, "../../build/forge"), rounds: 3, tokens: 128, json: false };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const key = argv[i].replace(/^--/, "").replace(/-(\w)/g, (_, c) => c.toUpperCase());
  if (key === "json") a.json = true;
  else a[key] = argv[++i];
}
const pairs = [["q8", a.llamaQ8, a.forgeQ8], ["f32", a.llamaF32, a.forgeF32]].filter(([, l, f]) => l && f);
if (!pairs.length) {
  console.error("usage: node compare.mjs [--forge BIN] --llama-q8 FILE --forge-q8 DIR --llama-f32 FILE --forge-f32 DIR " +
    "[--rounds N] [--tokens N] [--json]");
  process.exit(2);
}

const lastJson = (out) => JSON.parse(out.trim().split("\n").filter((l) => l.startsWith("{")).pop());
const llama = (file) => lastJson(execFileSync(process.execPath,
  [path.join(here, "decode.mjs"), "--model", file, "--tokens", String(a.tokens), "--json"], { encoding: "utf8" }));
// forge bench llm prints indented JSON; --prefill 0 leaves only the decode timing.
const forge = (dir) => JSON.parse(execFileSync(a.forge,
  ["bench", "llm", "-m", dir, "--device", "cpu", "--prefill", "0", "--decode-tokens", String(a.tokens), "--json"],
  { encoding: "utf8" })).results[0];

const rows = [];
for (let round = 1; round <= Number(a.rounds); round++) {
  for (const [dtype, gguf, dir] of pairs) {
    const load = os.loadavg()[0];
    const l = llama(gguf);
    const f = forge(dir);
    rows.push({ round, dtype, load_1min: load, llama_cpp: l.best_tokens_per_s, llama_cpp_mean: l.mean_tokens_per_s,
      llama_cpp_runs: l.decode_tokens_per_s, forge: f.decode_tokens_per_s, forge_decode_tokens: f.decode_tokens });
    const r = rows.at(-1);
    if (!a.json)
      console.log(`round ${round} ${dtype.padEnd(3)}  llama.cpp ${r.llama_cpp.toFixed(1).padStart(6)} tok/s ` +
        `(mean ${r.llama_cpp_mean.toFixed(1)})  forge ${r.forge.toFixed(1).padStart(6)} tok/s  ` +
        `ratio forge/llama.cpp ${(r.forge / r.llama_cpp).toFixed(2)}  load ${load.toFixed(2)}`);
  }
}
if (a.json) console.log(JSON.stringify({ bench: "llama.cpp vs forge decode", tokens: Number(a.tokens), rows }));
