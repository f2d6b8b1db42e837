// The page over forge.js: load a model, generate with streaming text, a
// simple chat, fixed-batch fine-tuning with a loss chart. window.forge is the
// module itself (the API tests and other pages use); window.forgePage holds
// the page's state for tests.
import * as forge from "./forge.js";

window.forge = forge;
const page = (window.forgePage = {model: null, ready: false, lastError: null});
const $ = (id) => document.getElementById(id);

function showError(e) {
  page.lastError = e ? String(e.message || e) : null;
  $("error").textContent = page.lastError ? `Error: ${page.lastError}` : "";
}

function setBusy(busy) {
  for (const id of ["load", "generate", "train", "chat-send"]) $(id).disabled = busy || (id !== "load" && !page.model);
}

// Token ids from "1 2 3" (or "1, 2, 3"); null when the text is not ids.
function parseIds(text) {
  const parts = text.trim().split(/[\s,]+/);
  return parts.length && parts.every((p) => /^\d+$/.test(p)) ? parts.map(Number) : null;
}

async function showAdapter() {
  const a = await forge.adapter();
  if (a.available) {
    const mib = (x) => `${Math.round(x / 1048576)} MiB`;
    $("adapter").textContent = `WebGPU: ${a.name}${a.type === "cpu" ? " (software)" : ""} · storage binding ` +
                               `${mib(a.maxStorageBinding)} · buffer ${mib(a.maxBuffer)}`;
  } else {
    $("adapter").textContent = "WebGPU unavailable: models run on the CPU (wasm)";
    $("notice").textContent = `This browser offers no WebGPU (${a.error}); the CPU path is used instead.`;
    $("device").value = "cpu";
  }
}

async function listModels() {
  try {
    const r = await fetch("/models/index.json");
    const {models} = await r.json();
    $("model-list").innerHTML = models.map((m) => `<option value="/models/${m}/">${m}</option>`).join("");
  } catch {
    $("model-list").innerHTML = "";
  }
}

async function loadModel() {
  showError(null);
  setBusy(true);
  const url = $("model-url").value.trim() || $("model-list").value;
  const start = performance.now();
  try {
    if (page.model) await page.model.close();
    page.model = null;
    const m = await forge.load(url, {
      device: $("device").value,
      onProgress: ({loaded, total}) => {
        $("model-info").textContent = `downloading ${(loaded / 1048576).toFixed(1)}` +
                                      (total ? ` of ${(total / 1048576).toFixed(1)} MiB` : " MiB");
      },
    });
    page.model = m;
    const i = m.info;
    $("model-info").textContent = `${i.architecture} · ${(i.parameters / 1e6).toFixed(2)}M parameters · ` +
                                  `${i.weights} · on ${i.device} · loaded in ${((performance.now() - start) / 1000).toFixed(2)} s`;
    if (m.fallback) $("notice").textContent = `WebGPU is missing (${m.fallback}): running on the CPU.`;
  } catch (e) {
    showError(e);
    $("model-info").textContent = "";
  } finally {
    setBusy(false);
  }
}

function samplingArgs() {
  const greedy = $("greedy").checked;
  const args = {maxTokens: Number($("max-tokens").value), greedy};
  if (!greedy) {
    Object.assign(args, {temperature: Number($("temperature").value), topK: Number($("top-k").value),
                         topP: Number($("top-p").value), seed: Number($("seed").value)});
  }
  return args;
}

async function generate() {
  showError(null);
  setBusy(true);
  const out = $("output");
  out.textContent = "";
  try {
    const text = $("prompt").value;
    const ids = parseIds(text);
    const args = samplingArgs();
    if (ids && !page.model.info.tokenizer) args.promptIds = ids;
    else args.prompt = text;
    let n = 0;
    const t0 = performance.now();
    const r = await page.model.generate({
      ...args,
      onToken: (id, piece) => {
        n += 1;
        out.textContent += page.model.info.tokenizer ? piece : `${id} `;
        $("gen-stats").textContent = `${n} tokens · ${(n / ((performance.now() - t0) / 1000)).toFixed(1)} tokens/s`;
      },
    });
    page.lastGenerate = r;
    $("gen-stats").textContent = `${r.ids.length} tokens · ${r.tokensPerSecond.toFixed(1)} tokens/s decode on ${page.model.device}`;
  } catch (e) {
    showError(e);
  } finally {
    setBusy(false);
  }
}

// A chat without a template engine in the page: the turns as plain text.
const chat = [];
async function sendChat() {
  const text = $("chat-input").value.trim();
  if (!text) return;
  showError(null);
  setBusy(true);
  try {
    if (!page.model.info.tokenizer) throw new Error("[chat] the model has no tokenizer.json");
    chat.push({role: "user", content: text});
    const prompt = chat.map((m) => `${m.role}: ${m.content}`).join("\n") + "\nassistant:";
    const div = document.createElement("div");
    renderChat();
    div.className = "msg assistant";
    $("chat").appendChild(div);
    const r = await page.model.generate({...samplingArgs(), prompt, onToken: (_, piece) => (div.textContent += piece)});
    chat.push({role: "assistant", content: r.text.split("\nuser:")[0].trim()});
    $("chat-input").value = "";
  } catch (e) {
    showError(e);
  } finally {
    renderChat();
    setBusy(false);
  }
}

function renderChat() {
  $("chat").innerHTML = "";
  for (const m of chat) {
    const d = document.createElement("div");
    d.className = `msg ${m.role}`;
    d.textContent = m.content;
    $("chat").appendChild(d);
  }
}

function drawLosses(losses) {
  const c = $("loss-chart"), g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  if (losses.length < 1) return;
  const lo = Math.min(...losses), hi = Math.max(...losses), span = hi - lo || 1;
  g.strokeStyle = "#1a73e8";
  g.lineWidth = 2;
  g.beginPath();
  losses.forEach((l, i) => {
    const x = 10 + (i / Math.max(1, losses.length - 1)) * (c.width - 20);
    const y = 10 + (1 - (l - lo) / span) * (c.height - 20);
    i ? g.lineTo(x, y) : g.moveTo(x, y);
  });
  g.stroke();
}

async function train() {
  showError(null);
  setBusy(true);
  try {
    const text = $("train-text").value;
    const ids = parseIds(text) || (await page.model.encode(text));
    const losses = [];
    const r = await page.model.train({
      inputIds: [ids], steps: Number($("steps").value), lr: Number($("lr").value), weightDecay: Number($("wd").value),
      onStep: ({step, loss}) => {
        losses.push(loss);
        drawLosses(losses);
        $("train-stats").textContent = `step ${step + 1}: loss ${loss.toFixed(4)}`;
      },
    });
    $("train-stats").textContent = `loss ${r.losses[0].toFixed(4)} → ${r.losses.at(-1).toFixed(4)} · ` +
                                   `${(r.stepSeconds * 1000).toFixed(0)} ms a step on ${page.model.device}`;
  } catch (e) {
    showError(e);
  } finally {
    setBusy(false);
  }
}

$("load").onclick = loadModel;
$("generate").onclick = generate;
$("train").onclick = train;
$("chat-send").onclick = sendChat;
$("chat-input").onkeydown = (e) => e.key === "Enter" && sendChat();

if (new URLSearchParams(location.search).has("nowebgpu")) forge.settings.disableWebGPU = true;
await Promise.all([listModels(), showAdapter()]);
page.ready = true;
