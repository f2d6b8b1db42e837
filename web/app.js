// The page over forge.js: load a model (served, a URL or a folder from disk;
// cached), generate with streaming text, a chat through the model's chat
// template, fixed-batch fine-tuning (full or LoRA) with a loss chart, pause
// and resume, and the result downloaded as safetensors. window.forge is the
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

function setBusy(busy, training = false) {
  for (const id of ["load", "model-files", "generate", "train", "chat-send", "download-adapter", "download-model"])
    $(id).disabled = busy || (!["load", "model-files"].includes(id) && !page.model);
  $("pause").disabled = !training;
  $("resume").disabled = busy || !page.paused;
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

// files: a FileList from the folder picker; otherwise the URL or served model.
async function loadModel(files = null) {
  showError(null);
  setBusy(true);
  const url = $("model-url").value.trim() || $("model-list").value;
  const start = performance.now();
  try {
    if (page.model) await page.model.close();
    page.model = null;
    page.paused = false;
    page.cachedBytes = 0;
    const onProgress = ({loaded, total, cached}) => {
      if (cached) page.cachedBytes += loaded;
      $("model-info").textContent = `${cached ? "from the cache" : files ? "reading" : "downloading"} ` +
                                    `${(loaded / 1048576).toFixed(1)}` + (total ? ` of ${(total / 1048576).toFixed(1)} MiB` : " MiB");
    };
    const device = $("device").value;
    const m = files ? await forge.loadFiles(files, {device, onProgress}) : await forge.load(url, {device, onProgress});
    page.model = m;
    chat.length = 0;
    renderChat();
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

// The chat: the conversation rendered by the model's own chat template (the
// native Jinja engine in the wasm build), the reply streamed until its end
// token.
const chat = [];
async function sendChat() {
  const text = $("chat-input").value.trim();
  if (!text) return;
  showError(null);
  setBusy(true);
  try {
    if (!page.model.info.chatTemplate) throw new Error("[chat] the model has no chat template (tokenizer_config.json)");
    if (!page.model.info.tokenizer) throw new Error("[chat] the model has no tokenizer.json");
    chat.push({role: "user", content: text});
    renderChat();
    const prompt = await page.model.chatPrompt(chat);
    const div = document.createElement("div");
    div.className = "msg assistant";
    $("chat").appendChild(div);
    const r = await page.model.generate({...samplingArgs(), promptIds: prompt.ids,
                                         onToken: (_, piece) => (div.textContent += piece)});
    chat.push({role: "assistant", content: r.text.trim()});
    page.lastChat = {prompt: prompt.text, promptIds: prompt.ids, ids: r.ids, text: r.text};
    $("chat-input").value = "";
  } catch (e) {
    if (chat.at(-1)?.role === "user") chat.pop();
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

const losses = [];
async function train(resume = false) {
  showError(null);
  setBusy(true, true);
  try {
    if (!resume) {
      const text = $("train-text").value;
      page.trainIds = [parseIds(text) || (await page.model.encode(text))];
      losses.length = 0;
    }
    const lora = $("lora").checked ? {rank: Number($("lora-rank").value)} : null;
    const r = await page.model.train({
      inputIds: page.trainIds, steps: Number($("steps").value) - (resume ? page.stepsDone : 0), lr: Number($("lr").value),
      weightDecay: Number($("wd").value), lora, resume,
      onStep: ({step, loss}) => {
        losses.push(loss);
        drawLosses(losses);
        $("train-stats").textContent = `step ${step + 1}: loss ${loss.toFixed(4)}`;
        page.onTrainStep?.(step + 1);  // tests: clicks Pause at a chosen step
      },
    });
    page.stepsDone = r.stepsDone;
    page.paused = r.paused;
    page.lastTrain = {losses: losses.slice(), paused: r.paused};
    $("train-stats").textContent = `${r.paused ? `paused after step ${r.stepsDone} · ` : ""}` +
                                   `loss ${losses[0].toFixed(4)} → ${losses.at(-1).toFixed(4)} · ` +
                                   `${(r.stepSeconds * 1000).toFixed(0)} ms a step on ${page.model.device}`;
  } catch (e) {
    showError(e);
  } finally {
    setBusy(false);
  }
}

// The trained result, one download per file (the folder native forge reads).
async function download(kind) {
  showError(null);
  setBusy(true);
  try {
    const files = await page.model.export({kind});
    for (const [name, bytes] of Object.entries(files)) {
      const a = document.createElement("a");
      a.href = URL.createObjectURL(new Blob([bytes]));
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    }
    page.lastDownload = Object.keys(files);
  } catch (e) {
    showError(e);
  } finally {
    setBusy(false);
  }
}

$("load").onclick = () => loadModel();
$("model-files").onchange = (e) => e.target.files.length && loadModel(e.target.files);
$("clear-cache").onclick = async () => {
  await forge.clearCache();
  $("model-info").textContent = "cache cleared";
};
$("generate").onclick = generate;
$("train").onclick = () => train(false);
$("pause").onclick = () => page.model?.pause();
$("resume").onclick = () => train(true);
$("download-adapter").onclick = () => download("adapter");
$("download-model").onclick = () => download("model");
$("chat-send").onclick = sendChat;
$("chat-input").onkeydown = (e) => e.key === "Enter" && sendChat();

const query = new URLSearchParams(location.search);
if (query.has("nowebgpu")) forge.settings.disableWebGPU = true;
if (query.has("maxheap")) forge.settings.maxHeapBytes = Number(query.get("maxheap"));  // bytes: a smaller wasm heap
await Promise.all([listModels(), showAdapter()]);
page.ready = true;
