// The page's features beyond generate/train parity, in Debian's Chromium
// (headless, WebGPU on SwiftShader), checked against the native CLI:
//  - op parity in the page: matmul, softmax, layernorm, rms_norm and
//    attention on the page's WebGPU against its CPU (wasm) path;
//  - the cache: a second load of a folder in the same browser context makes no
//    request for its files, and generates the same ids;
//  - a model folder from the user's disk (the folder picker; an MLX 4-bit
//    folder) gives the native greedy ids;
//  - chat templates: the wasm build renders the fixtures' conversations as
//    Hugging Face does, and the page's chat sends the rendered conversation's
//    ids (as `forge tokenize` encodes them) and streams the native reply;
//  - LoRA in the tab (CPU path) with Pause and Resume: 10 steps (paused after 3) match
//    `forge train --fixed-batch --lora-rank 4` within 5e-3; the downloaded
//    adapter (PEFT layout) loads in native `forge eval --adapter` with the
//    page's loss; a fully trained model downloaded in Hugging Face's layout
//    loads in native `forge eval` with the page's loss.
//
// node tests/web/features.test.mjs (scripts/test-web.sh builds what it needs).
import {execFileSync} from "node:child_process";
import {mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {fixtures, launch, openPage, root, startServer} from "./harness.mjs";

const forgeBin = process.env.FORGE_BIN || join(root, "build", "forge");
const LOSS_TOL = 5e-3;
// |webgpu - cpu| <= OP_TOL * max(1, max |cpu|): f32 sums in other orders
// (64-term dot products at most here); a wrong index or mask is off by O(1).
const OP_TOL = 1e-4;
const TEMPLATES = ["smollm2", "llama3.2", "qwen2.5", "gemma2", "mistral"];

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

function forge(args) {
  const out = execFileSync(forgeBin, args, {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"]});
  return JSON.parse(out.trim().split("\n").at(-1));
}

// input_ids i32 [1, T] as a safetensors file (what forge eval --input and
// forge train --fixed-batch read).
function writeIds(path, ids) {
  const header = Buffer.from(JSON.stringify({input_ids: {dtype: "I32", shape: [1, ids.length],
                                                         data_offsets: [0, 4 * ids.length]}}));
  const pad = (8 - (header.length % 8)) % 8;
  const h = Buffer.concat([header, Buffer.alloc(pad, " ")]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  writeFileSync(path, Buffer.concat([len, h, Buffer.from(Int32Array.from(ids).buffer)]));
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const started = Date.now();
const tmp = mkdtempSync(join(tmpdir(), "forge-web-"));
const server = await startServer();
const browser = await launch({webgpu: true});
try {
  const context = await browser.newContext({viewport: {width: 1200, height: 900}, acceptDownloads: true});
  const page = await openPage(context, server.url);

  // ---- op parity ---------------------------------------------------------
  const rows = await page.evaluate(() => window.forge.opParity());
  check(rows.length >= 8, `op parity: ${rows.length} ops ran on WebGPU and the CPU`);
  for (const r of rows) {
    check(r.size > 0 && r.maxAbs <= OP_TOL * Math.max(1, r.maxRef),
          `op parity: ${r.op} [${r.shape}] max |webgpu - cpu| ${r.maxAbs.toExponential(2)} (max |cpu| ${r.maxRef.toFixed(2)})`);
  }

  // ---- the cache -----------------------------------------------------------
  const prompt = [5, 17, 42, 7];
  const requests = [];
  page.on("request", (r) => r.url().includes("/models/gpt2-tiny/") && requests.push(r.url()));
  const loadTwice = () => page.evaluate(async (prompt) => {
    const m = await window.forge.load("/models/gpt2-tiny/", {device: "cpu"});
    const g = await m.generate({promptIds: prompt, maxTokens: 12, greedy: true});
    await m.close();
    return g.ids;
  }, prompt);
  await page.evaluate(() => window.forge.clearCache());
  const first = await loadTwice();
  const firstRequests = requests.length;
  const second = await loadTwice();
  check(firstRequests > 0 && requests.length === firstRequests,
        `the cache: the first load made ${firstRequests} requests, the second ${requests.length - firstRequests}`);
  check(same(first, second), "the cache: the cached model generates the same ids");

  // ---- a folder from the user's disk (MLX 4-bit) ----------------------------
  const mlx = join(fixtures, "llama-tiny-mlx4");
  const mlxWant = forge(["generate", "--model", mlx, "--prompt-ids", prompt.join(","), "-n", "12", "--greedy",
                         "--json", "--device", "cpu"]).ids;
  await page.selectOption("#device", "cpu");
  await page.setInputFiles("#model-files", mlx);
  await page.waitForFunction(() => window.forgePage.model && !document.getElementById("generate").disabled, null,
                             {timeout: 120000});
  const fromDisk = await page.evaluate(async (prompt) =>
    (await window.forgePage.model.generate({promptIds: prompt, maxTokens: 12, greedy: true})).ids, prompt);
  check(same(fromDisk, mlxWant), "a folder from disk (MLX 4-bit, the folder picker): greedy ids equal the native CLI's");

  // ---- chat templates --------------------------------------------------------
  // gpt2-vocab50257 with GPT-2's tokenizer and a fixture's chat template in
  // tokenizer_config.json, served as /models/chat-NAME/.
  await page.route("**/models/chat-*/**", (route) => {
    const parts = route.request().url().split("/"), file = parts.at(-1), name = parts.at(-2).slice(5);
    const t = JSON.parse(readFileSync(join(fixtures, "chat-templates", `${name}.json`), "utf8"));
    if (file === "tokenizer_config.json")
      return route.fulfill({body: JSON.stringify({chat_template: t.template, bos_token: t.bos_token, eos_token: t.eos_token})});
    if (file === "tokenizer.json") return route.fulfill({path: join(fixtures, "tokenizer-gpt2", file)});
    if (["config.json", "model.safetensors", "generation_config.json"].includes(file))
      return route.fulfill({path: join(fixtures, "gpt2-vocab50257", file)});
    return route.fulfill({status: 404, body: "not found"});
  });
  for (const name of TEMPLATES) {
    const t = JSON.parse(readFileSync(join(fixtures, "chat-templates", `${name}.json`), "utf8"));
    const cases = t.cases;
    const got = await page.evaluate(async ({name, cases}) => {
      const m = await window.forge.load(`/models/chat-${name}/`, {device: "cpu"});
      const out = [];
      for (const c of cases) {
        try {
          out.push((await m.chatPrompt(c.messages, {addGenerationPrompt: c.add_generation_prompt, extra: c.kwargs})).text);
        } catch (e) {
          out.push({error: e.message});
        }
      }
      await m.close();
      return out;
    }, {name, cases});
    // A case Hugging Face's template raised on ("TemplateError: MESSAGE") must
    // raise MESSAGE in the page too.
    const bad = cases.filter((c, i) => (c.error ? !got[i].error || c.error !== `TemplateError: ${got[i].error}`
                                                : c.text !== got[i]));
    check(cases.length > 0 && bad.length === 0,
          `chat template ${name}: ${cases.length - bad.length} of ${cases.length} conversations render (or raise) as ` +
          `Hugging Face's${bad.length ? `; first miss: ${JSON.stringify(got[cases.indexOf(bad[0])])}` : ""}`);
  }
  const smol = JSON.parse(readFileSync(join(fixtures, "chat-templates", "smollm2.json"), "utf8"));
  await page.fill("#model-url", "/models/chat-smollm2/");
  await page.click("#load");
  await page.waitForFunction(() => window.forgePage.model?.info.chatTemplate && !document.getElementById("chat-send").disabled,
                             null, {timeout: 120000});
  await page.fill("#max-tokens", "8");
  await page.fill("#chat-input", "Hello!");
  await page.click("#chat-send");
  await page.waitForFunction(() => window.forgePage.lastChat, null, {timeout: 120000});
  const chat = await page.evaluate(() => window.forgePage.lastChat);
  check(chat.prompt === smol.cases[0].text, "the page's chat renders the conversation with the model's template");
  const tokenized = forge(["tokenize", "--tokenizer", join(fixtures, "tokenizer-gpt2", "tokenizer.json"), "--no-special",
                           "--json", "--text", chat.prompt]).ids;
  check(same(chat.promptIds, tokenized), `the chat's prompt ids equal forge tokenize's (${tokenized.length} ids)`);
  const reply = forge(["generate", "--model", join(fixtures, "gpt2-vocab50257"), "--prompt-ids", tokenized.join(","),
                       "-n", "8", "--greedy", "--json", "--device", "cpu"]).ids;
  check(same(chat.ids, reply), "the chat's reply ids equal forge generate's on those ids");
  check((await page.locator("#chat .msg").count()) === 2, "the chat view shows the user's message and the reply");

  // ---- LoRA in the tab, paused and resumed, downloaded ------------------------
  const llama = join(fixtures, "llama-tiny");
  const ids = Array.from({length: 16}, (_, i) => (i * 7 + 3) % 64);
  const idsFile = join(tmp, "ids.safetensors");
  writeIds(idsFile, ids);
  const nativeLora = forge(["train", "--model", llama, "--fixed-batch", idsFile, "--steps", "10", "--lr", "1e-3",
                            "--weight-decay", "0.01", "--lora-rank", "4", "--device", "cpu"]).losses;
  // On the CPU path: Llama's trainer on the page's WebGPU is page.test.mjs's
  // (SwiftShader takes seconds a step); pausing and exporting are the same on both.
  await page.selectOption("#device", "cpu");
  await page.fill("#model-url", "/models/llama-tiny/");
  await page.click("#load");
  await page.waitForFunction(() => window.forgePage.model?.info.family === "llama" &&
                             !document.getElementById("train").disabled, null, {timeout: 120000});
  await page.fill("#train-text", ids.join(" "));
  await page.fill("#steps", "10");
  await page.check("#lora");
  await page.fill("#lora-rank", "4");
  await page.evaluate(() => {
    window.forgePage.lastTrain = null;
    window.forgePage.onTrainStep = (step) => step === 3 && document.getElementById("pause").click();
  });
  await page.click("#train");
  await page.waitForFunction(() => window.forgePage.lastTrain, null, {timeout: 120000});
  const paused = await page.evaluate(() => ({...window.forgePage.lastTrain, done: window.forgePage.stepsDone}));
  check(paused.paused && paused.done === 3 && paused.losses.length === 3, `Pause stops training after step ${paused.done}`);
  await page.evaluate(() => {
    window.forgePage.lastTrain = null;
    window.forgePage.onTrainStep = null;
  });
  await page.click("#resume");
  await page.waitForFunction(() => window.forgePage.lastTrain, null, {timeout: 120000});
  const lora = await page.evaluate(() => window.forgePage.lastTrain);
  const diff = Math.max(...nativeLora.map((l, i) => Math.abs(l - lora.losses[i])));
  check(!lora.paused && lora.losses.length === 10 && diff <= LOSS_TOL,
        `LoRA, paused after 3 steps and resumed: 10 losses within ${LOSS_TOL} of native --lora-rank 4 ` +
        `(max diff ${diff.toExponential(2)})`);

  // Clicks a download button; saves every file it downloads into dir ->
  // their names, sorted (the page lists what it offered in lastDownload).
  const saveDownloads = async (button, dir) => {
    mkdirSync(dir, {recursive: true});
    const saved = [];
    const onDownload = (d) => saved.push(d.saveAs(join(dir, d.suggestedFilename())).then(() => d.suggestedFilename()));
    page.on("download", onDownload);
    await page.evaluate(() => (window.forgePage.lastDownload = null));
    await page.click(button);
    await page.waitForFunction(() => window.forgePage.lastDownload || document.getElementById("error").textContent,
                               null, {timeout: 120000});
    const offered = await page.evaluate(() => window.forgePage.lastDownload || []);
    for (let waited = 0; saved.length < offered.length && waited < 60000; waited += 100)
      await new Promise((r) => setTimeout(r, 100));
    page.off("download", onDownload);
    return (await Promise.all(saved)).sort();
  };
  const pageLoss = await page.evaluate(async (ids) => (await window.forgePage.model.eval([ids])).loss, ids);
  const adapterDir = join(tmp, "adapter");
  const adapterFiles = await saveDownloads("#download-adapter", adapterDir);
  check(same(adapterFiles, ["adapter_config.json", "adapter_model.safetensors"]),
        `Download adapter gives a PEFT folder (${adapterFiles.join(", ")})`);
  const nativeAdapter = forge(["eval", "--model", llama, "--adapter", adapterDir, "--input", idsFile, "--json",
                               "--device", "cpu"]).loss;
  check(Math.abs(nativeAdapter - pageLoss) <= LOSS_TOL,
        `native forge eval --adapter loads the downloaded adapter: loss ${nativeAdapter.toFixed(5)}, the page's ${pageLoss.toFixed(5)}`);

  // A full fine-tune (3 steps), downloaded as a Hugging Face model folder.
  await page.click("#load");
  await page.waitForFunction(() => window.forgePage.model && !document.getElementById("train").disabled, null,
                             {timeout: 120000});
  await page.uncheck("#lora");
  await page.fill("#steps", "3");
  await page.evaluate(() => (window.forgePage.lastTrain = null));
  await page.click("#train");
  await page.waitForFunction(() => window.forgePage.lastTrain, null, {timeout: 120000});
  const fullLoss = await page.evaluate(async (ids) => (await window.forgePage.model.eval([ids])).loss, ids);
  const modelDir = join(tmp, "model");
  const modelFiles = await saveDownloads("#download-model", modelDir);
  check(modelFiles.includes("config.json") && modelFiles.includes("model.safetensors"),
        `Download model gives a Hugging Face folder (${modelFiles.join(", ")})`);
  const nativeModel = forge(["eval", "--model", modelDir, "--input", idsFile, "--json", "--device", "cpu"]).loss;
  const baseLoss = forge(["eval", "--model", llama, "--input", idsFile, "--json", "--device", "cpu"]).loss;
  check(Math.abs(nativeModel - fullLoss) <= LOSS_TOL && Math.abs(baseLoss - fullLoss) > 10 * LOSS_TOL,
        `native forge eval loads the downloaded model: loss ${nativeModel.toFixed(5)}, the page's ${fullLoss.toFixed(5)} ` +
        `(the base's ${baseLoss.toFixed(5)})`);
  await context.close();
} catch (e) {
  check(false, `unexpected: ${e.stack || e}`);
} finally {
  await browser.close();
  server.proc.kill();
  rmSync(tmp, {recursive: true, force: true});
}
console.log(`features.test.mjs: ${failures ? `${failures} check(s) failed` : "all checks passed"} in ` +
            `${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failures ? 1 : 0);
