// The page in Debian's Chromium (headless, WebGPU on SwiftShader), against the
// native CLI on the same model folders:
//  - the page loads and reports its adapter;
//  - 24 greedy ids from the GPT-2 and Llama fixtures equal `forge generate
//    --greedy` (identical ids), on the CPU (wasm) and on WebGPU;
//  - 10 fixed-batch training steps match `forge train --fixed-batch` losses
//    within 5e-3 (f32 kernels summing in other orders; the native losses move
//    by ~0.1 a step, so a wrong update shows far above it);
//  - without WebGPU (Chromium without --enable-unsafe-webgpu) a "webgpu" load
//    falls back to the CPU and still generates the native ids;
//  - the other families' fixtures give the native greedy ids (CPU; MLX 4-bit
//    on WebGPU too);
//  - the tokenizer fixtures' cases encode and decode as Hugging Face's (the
//    browser build's regexes and Unicode tables are the page's own);
//  - a malformed model file shows an error in the page, which then loads and
//    generates with a good model;
//  - a screenshot of the page after generating is written to $FORGE_WEB_ARTIFACTS.
//
// node tests/web/page.test.mjs (scripts/test-web.sh builds what it needs first).
// Exits non-zero on the first failed check.
import {execFileSync} from "node:child_process";
import {existsSync, mkdirSync, readFileSync} from "node:fs";
import {join} from "node:path";
import {fixtures, launch, openPage, root, startServer} from "./harness.mjs";

const forgeBin = process.env.FORGE_BIN || join(root, "build", "forge");
const artifacts = process.env.FORGE_WEB_ARTIFACTS || join(root, "build-wasm", "web-test");
const MODELS = ["gpt2-tiny", "llama-tiny"];
const FAMILIES = [["llama3-tiny", ["cpu"]], ["mistral-tiny", ["cpu"]], ["qwen2-tiny", ["cpu"]],
                  ["llama-tiny-mlx4", ["cpu", "webgpu"]], ["llama-tiny-mlx8", ["cpu"]], ["gpt2-vocab50257", ["cpu"]]];
const TOKENIZERS = ["gpt2", "llama3", "qwen2", "smollm2", "spm", "metaspace"];
const LOSS_TOL = 5e-3;

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

// A tensor of a safetensors file as a flat array (I32 / F32 only).
function tensor(file, name) {
  const buf = readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString());
  const t = header[name];
  const [b, e] = t.data_offsets.map((o) => 8 + n + o);
  const bytes = buf.subarray(b, e);
  const view = t.dtype === "I32" ? new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))
                                 : new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return {shape: t.shape, values: Array.from(view)};
}

function rows({shape, values}) {
  const out = [];
  for (let r = 0; r < shape[0]; ++r) out.push(values.slice(r * shape[1], (r + 1) * shape[1]));
  return out;
}

function lastJsonLine(text) {
  return JSON.parse(text.trim().split("\n").at(-1));
}

// What the native CLI gives on each fixture.
function nativeReferences() {
  const refs = {};
  for (const name of MODELS) {
    const dir = join(fixtures, name), ref = join(dir, "reference.safetensors");
    const prompt = tensor(ref, "generate_prompt").values;
    const gen = lastJsonLine(execFileSync(forgeBin, ["generate", "--model", dir, "--prompt-ids", prompt.join(","),
                                                     "-n", "24", "--greedy", "--json", "--device", "cpu"],
                                          {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"]}));
    const train = lastJsonLine(execFileSync(forgeBin, ["train", "--model", dir, "--fixed-batch", ref, "--steps", "10",
                                                       "--lr", "1e-3", "--weight-decay", "0.01", "--device", "cpu"],
                                            {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"]}));
    refs[name] = {prompt, ids: gen.ids, inputIds: rows(tensor(ref, "input_ids")), losses: train.losses};
  }
  return refs;
}

// Loads the fixture on `device`, generates 24 greedy ids, trains 10 steps.
function runInPage(page, name, device, ref) {
  return page.evaluate(async ({name, device, ref}) => {
    const m = await window.forge.load(`/models/${name}/`, {device});
    const t0 = performance.now();
    const gen = await m.generate({promptIds: ref.prompt, maxTokens: 24, greedy: true});
    const genSeconds = (performance.now() - t0) / 1000;
    const ev = await m.eval(ref.inputIds);
    const train = await m.train({inputIds: ref.inputIds, steps: 10, lr: 1e-3, weightDecay: 0.01});
    await m.close();
    return {device: m.device, fallback: m.fallback, ids: gen.ids, tokensPerSecond: gen.tokensPerSecond, genSeconds,
            evalLoss: ev.loss, logitsLength: ev.logits.length, losses: train.losses, stepSeconds: train.stepSeconds};
  }, {name, device, ref});
}

function compare(name, device, got, ref) {
  check(got.device === device, `${name} on ${device}: ran on ${got.device}${got.fallback ? ` (${got.fallback})` : ""}`);
  check(JSON.stringify(got.ids) === JSON.stringify(ref.ids),
        `${name} on ${device}: greedy ids equal the native CLI's (${got.ids.length} ids)`);
  const diff = Math.max(...ref.losses.map((l, i) => Math.abs(l - got.losses[i])));
  check(got.losses.length === 10 && diff <= LOSS_TOL,
        `${name} on ${device}: 10 training losses within ${LOSS_TOL} of native (max diff ${diff.toExponential(2)})`);
  check(Math.abs(got.evalLoss - ref.losses[0]) <= LOSS_TOL, `${name} on ${device}: eval loss ${got.evalLoss} = first training loss`);
  console.log(`     ${name} on ${device}: ${got.tokensPerSecond.toFixed(1)} tokens/s decode, ` +
              `${(got.stepSeconds * 1000).toFixed(0)} ms a training step`);
}

const started = Date.now();
const refs = nativeReferences();
const server = await startServer();
mkdirSync(artifacts, {recursive: true});
const browser = await launch({webgpu: true});
let plain = null;
try {
  const page = await openPage(browser, server.url);
  const adapter = await page.evaluate(() => window.forge.adapter());
  check(adapter.available === true, `the page has a WebGPU adapter (${adapter.name || adapter.error})`);

  for (const device of ["cpu", "webgpu"]) {
    for (const name of MODELS) compare(name, device, await runInPage(page, name, device, refs[name]), refs[name]);
  }

  // gpt2-tiny's config without its special ids, which the tokenizer would
  // otherwise take (they are GPT-2's, outside the smaller vocabularies).
  const bareConfig = JSON.parse(readFileSync(join(fixtures, "gpt2-tiny", "config.json"), "utf8"));
  delete bareConfig.bos_token_id;
  delete bareConfig.eos_token_id;

  // The other families (Llama 3 rope scaling, Mistral's sliding window,
  // Qwen2's q/k/v bias, MLX 4- and 8-bit weights, GPT-2's full vocabulary):
  // 12 greedy ids as the native CLI's, on the CPU; the 4-bit one on WebGPU too
  // (SwiftShader is slow: the rest of WebGPU is covered above).
  for (const [name, devices] of FAMILIES) {
    const prompt = [5, 17, 42, 7];
    const want = lastJsonLine(execFileSync(forgeBin, ["generate", "--model", join(fixtures, name), "--prompt-ids",
                                                      prompt.join(","), "-n", "12", "--greedy", "--json", "--device", "cpu"],
                                           {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"]})).ids;
    for (const device of devices) {
      const got = await page.evaluate(async ({name, device, prompt}) => {
        const m = await window.forge.load(`/models/${name}/`, {device});
        const g = await m.generate({promptIds: prompt, maxTokens: 12, greedy: true});
        await m.close();
        return g.ids;
      }, {name, device, prompt});
      check(JSON.stringify(got) === JSON.stringify(want), `${name} on ${device}: 12 greedy ids equal the native CLI's`);
    }
  }

  // The tokenizer on the page's RegExp and Unicode tables (in place of
  // Oniguruma and ICU): each tokenizer fixture's cases, encoded and decoded
  // exactly as Hugging Face tokenizers does. The model beside it is gpt2-tiny
  // (encode and decode do not look at it).
  await page.route("**/models/tok-*/**", (route) => {
    const parts = route.request().url().split("/"), file = parts.at(-1), tok = parts.at(-2).slice(4);
    if (file === "tokenizer.json") return route.fulfill({path: join(fixtures, `tokenizer-${tok}`, file)});
    if (file === "model.safetensors") return route.fulfill({path: join(fixtures, "gpt2-tiny", file)});
    if (file === "config.json") return route.fulfill({body: JSON.stringify(bareConfig)});
    return route.fulfill({status: 404, body: "not found"});
  });
  for (const tok of TOKENIZERS) {
    // cases.json, then cases-extra.json where a fixture has one (SmolLM2's:
    // number characters other than 0-9, through Digits' Unicode test).
    const extra = join(fixtures, `tokenizer-${tok}`, "cases-extra.json");
    const cases = JSON.parse(readFileSync(join(fixtures, `tokenizer-${tok}`, "cases.json"), "utf8"))
                      .concat(existsSync(extra) ? JSON.parse(readFileSync(extra, "utf8")) : []);
    const got = await page.evaluate(async ({tok, cases}) => {
      const m = await window.forge.load(`/models/tok-${tok}/`, {device: "cpu"});
      const out = [];
      for (const c of cases) out.push({ids: await m.encode(c.text), decoded: await m.decode(c.ids)});
      await m.close();
      return out;
    }, {tok, cases});
    const bad = cases.filter((c, i) => JSON.stringify(c.ids) !== JSON.stringify(got[i].ids) || c.decoded !== got[i].decoded);
    check(bad.length === 0, `tokenizer-${tok}: ${cases.length - bad.length} of ${cases.length} cases encode and decode as ` +
                            `Hugging Face's${bad.length ? `; first miss: ${JSON.stringify(bad[0].text)}` : ""}`);
  }

  // A malformed model file: an error in the page, then the page still works.
  await page.route("**/models/broken/**", (route) => {
    const file = route.request().url().split("/").at(-1);
    if (file === "config.json") return route.fulfill({path: join(fixtures, "gpt2-tiny", "config.json")});
    if (file === "model.safetensors") return route.fulfill({body: Buffer.from("\x10\x00\x00\x00\x00\x00\x00\x00{not json")});
    return route.fulfill({status: 404, body: "not found"});
  });
  await page.fill("#model-url", "/models/broken/");
  await page.click("#load");
  await page.waitForFunction(() => document.getElementById("error").textContent.length > 0, null, {timeout: 60000});
  const error = await page.textContent("#error");
  check(/safetensors|header|json/i.test(error), `a malformed model file shows an error: ${error.trim().slice(0, 120)}`);

  await page.fill("#model-url", "/models/gpt2-tiny/");
  await page.selectOption("#device", "webgpu");
  await page.click("#load");
  await page.waitForFunction(() => window.forgePage.model && !document.getElementById("generate").disabled, null,
                             {timeout: 60000});
  check((await page.textContent("#error")) === "", "the error clears when a good model loads");
  await page.fill("#prompt", refs["gpt2-tiny"].prompt.join(" "));
  await page.click("#generate");
  await page.waitForFunction(() => window.forgePage.lastGenerate, null, {timeout: 60000});
  const ui = await page.evaluate(() => window.forgePage.lastGenerate.ids);
  check(JSON.stringify(ui) === JSON.stringify(refs["gpt2-tiny"].ids), "the page's Generate button gives the native ids");
  await page.screenshot({path: join(artifacts, "page.png"), fullPage: true});
  console.log(`     screenshot: ${join(artifacts, "page.png")}`);

  // Without WebGPU: a "webgpu" load runs on the CPU and says why.
  plain = await launch({webgpu: false});
  const noGpu = await openPage(plain, server.url);
  const got = await runInPage(noGpu, "gpt2-tiny", "webgpu", refs["gpt2-tiny"]);
  check(got.device === "cpu" && !!got.fallback, `without WebGPU the page falls back to the CPU (${got.fallback})`);
  check(JSON.stringify(got.ids) === JSON.stringify(refs["gpt2-tiny"].ids), "and generates the native ids there");
  check((await noGpu.textContent("#notice")).includes("CPU"), "and the page says WebGPU is missing");
} catch (e) {
  check(false, `unexpected: ${e.stack || e}`);
} finally {
  await browser.close();
  if (plain) await plain.close();
  server.proc.kill();
}
console.log(`page.test.mjs: ${failures ? `${failures} check(s) failed` : "all checks passed"} in ` +
            `${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failures ? 1 : 0);
