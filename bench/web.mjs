// Figures for forge in the browser (not a test): the wasm and JS sizes, and
// per model folder and device the load time, greedy decode tokens/s and the
// fixed-batch training step time in the tab (second run: the first compiles
// the kernels; LoRA of rank 8 for a quantized model), beside the native CLI on the same folder and machine. One
// JSON line per model and device. Needs build/forge and build-wasm
// (scripts/web.sh --build-only).
//
//   node bench/web.mjs [--models DIR] [--names a,b] [--tokens 64] [--steps 10]
import {execFileSync} from "node:child_process";
import {statSync} from "node:fs";
import {join} from "node:path";
import {fixtures, launch, openPage, root, startServer} from "../tests/web/harness.mjs";

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const models = opt("models", fixtures);
const names = opt("names", "gpt2-tiny,llama-tiny").split(",");
const tokens = Number(opt("tokens", "64"));
const steps = Number(opt("steps", "10"));
const forgeBin = join(root, "build", "forge");
const prompt = [1, 2, 3, 4, 5, 6, 7, 8];
const batch = [Array.from({length: 16}, (_, i) => (i * 7 + 3) % 97), Array.from({length: 16}, (_, i) => (i * 5 + 1) % 89)];

console.log(JSON.stringify({wasm_bytes: statSync(join(root, "build-wasm", "forge_wasm.wasm")).size,
                            js_bytes: statSync(join(root, "build-wasm", "forge_wasm.js")).size +
                                      statSync(join(root, "web", "forge.js")).size}));

function native(dir, device) {
  const out = execFileSync(forgeBin, ["generate", "--model", dir, "--prompt-ids", prompt.join(","), "-n", String(tokens),
                                      "--greedy", "--json", "--device", device, "--ignore-eos"],
                           {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"]});
  return JSON.parse(out.trim().split("\n").at(-1)).decode_tokens_per_s;
}

const server = await startServer(models);
const browser = await launch({webgpu: true});
try {
  const page = await openPage(browser, server.url);
  for (const name of names) {
    for (const device of ["cpu", "webgpu"]) {
      const r = await page.evaluate(async ({name, device, prompt, batch, tokens, steps}) => {
        const t0 = performance.now();
        const m = await window.forge.load(`/models/${name}/`, {device});
        const load_s = (performance.now() - t0) / 1000;
        const gen = [];
        for (let i = 0; i < 2; ++i) gen.push(await m.generate({promptIds: prompt, maxTokens: tokens, greedy: true}));
        // A quantized model (the shipped one) fine-tunes with LoRA only.
        const lora = m.info.weights.startsWith("mlx") ? {rank: 8} : undefined;
        const train = [];
        for (let i = 0; i < 2; ++i)  // an adapter, once attached, trains on with resume
          train.push(await m.train({inputIds: batch, steps, lr: 1e-3, weightDecay: 0.01, lora: i ? undefined : lora,
                                    resume: Boolean(i && lora)}));
        await m.close();
        return {load_s, tokens: gen[1].ids.length, decode_tokens_per_s: gen[1].tokensPerSecond,
                first_decode_tokens_per_s: gen[0].tokensPerSecond, train_step_ms: train[1].stepSeconds * 1000,
                first_train_step_ms: train[0].stepSeconds * 1000, training: lora ? "lora r8" : "full", ran_on: m.device};
      }, {name, device, prompt, batch, tokens, steps});
      r.native_decode_tokens_per_s = native(join(models, name), device);
      console.log(JSON.stringify({model: name, device, ...r}));
    }
  }
} finally {
  await browser.close();
  server.proc.kill();
}
