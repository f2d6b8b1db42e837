#!/usr/bin/env node
// Converts a Hugging Face GPT-2 folder (config.json, model.safetensors in f32,
// tokenizer.json) to a GGUF v3 file that llama.cpp loads as its "gpt2"
// architecture, so llama.cpp and forge can run the very same weights.
//
//   node gguf_gpt2.mjs [--type f32|q8_0] MODEL_DIR OUT.gguf
//
// Written from the GGUF spec: header, metadata key/values, tensor infos, then
// the tensor data, each tensor starting at a multiple of general.alignment.
// Assumes a little-endian host (safetensors and GGUF are little-endian and
// the typed arrays below use the host's order).
import fs from "node:fs";
import path from "node:path";
import { once } from "node:events";

const ALIGN = 32;
// GGUF metadata value types.
const T = { U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9 };
// ggml tensor types and llama.cpp's file types (general.file_type).
const GGML = { f32: 0, q8_0: 8 };
const FILE_TYPE = { f32: 0, q8_0: 7 };
const QK = 32; // q8_0 block: f16 scale + 32 int8 = 34 bytes

function parseArgs(argv) {
  const a = { type: "f32", pos: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--type") a.type = argv[++i];
    else if (argv[i] === "-h" || argv[i] === "--help") a.help = true;
    else a.pos.push(argv[i]);
  }
  if (a.help || a.pos.length !== 2 || !(a.type in GGML)) {
    console.error("usage: node gguf_gpt2.mjs [--type f32|q8_0] MODEL_DIR OUT.gguf");
    process.exit(a.help ? 0 : 2);
  }
  return a;
}

// --- safetensors: u64 header length, JSON header, raw little-endian data ---
function openSafetensors(file) {
  const fd = fs.openSync(file, "r");
  const readAt = (buf, pos) => {
    for (let done = 0; done < buf.length;) {
      const n = fs.readSync(fd, buf, done, buf.length - done, pos + done);
      if (n === 0) throw new Error(`${file}: truncated`);
      done += n;
    }
  };
  const len = Buffer.alloc(8);
  readAt(len, 0);
  const headerLen = Number(len.readBigUInt64LE(0));
  const header = Buffer.alloc(headerLen);
  readAt(header, 8);
  const infos = new Map();
  for (const [name, info] of Object.entries(JSON.parse(header.toString("utf8")))) {
    // Checkpoints saved from GPT2LMHeadModel prefix the names with "transformer."
    if (name !== "__metadata__") infos.set(name.replace(/^transformer\./, ""), info);
  }
  const dataStart = 8 + headerLen;
  return {
    has: (name) => infos.has(name),
    shape(name) {
      if (!infos.has(name)) throw new Error(`missing tensor ${name}`);
      return infos.get(name).shape;
    },
    // One tensor in its own (so 4-byte aligned) Float32Array.
    load(name) {
      const info = infos.get(name);
      if (!info) throw new Error(`missing tensor ${name}`);
      if (info.dtype !== "F32") throw new Error(`${name}: ${info.dtype}, only F32 checkpoints are supported`);
      const [begin, end] = info.data_offsets;
      const out = new Float32Array((end - begin) / 4);
      readAt(new Uint8Array(out.buffer), dataStart + begin);
      return { shape: info.shape, data: out };
    },
  };
}

// HF's Conv1D stores [in, out]; ggml's matmul weight is [out, in] row-major.
function transpose({ shape: [rows, cols], data }) {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return { shape: [cols, rows], data: out };
}

// f32 -> IEEE half bits, round to nearest even (Node 20 has no f16 arrays).
const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);
function toHalf(x) {
  f32buf[0] = x;
  const b = u32buf[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  let shift = 13;
  let h;
  if (e <= 0) { // half subnormal
    if (e < -10) return sign;
    mant |= 0x800000;
    shift = 14 - e;
    h = mant >>> shift;
  } else {
    h = (e << 10) | (mant >>> 13);
  }
  const rem = mant & ((1 << shift) - 1);
  const halfway = 1 << (shift - 1);
  if (rem > halfway || (rem === halfway && (h & 1))) h++; // a carry into the exponent is still right
  return sign | h;
}

// q8_0: per 32 values along a row, d = max|x| / 127 (stored f16), q = round(x / d).
function quantizeQ8_0(data) {
  const nb = data.length / QK;
  const out = Buffer.alloc(nb * (2 + QK));
  const q = new Int8Array(out.buffer, out.byteOffset, out.length);
  for (let b = 0; b < nb; b++) {
    const x = data.subarray(b * QK, (b + 1) * QK);
    let amax = 0;
    for (let i = 0; i < QK; i++) amax = Math.max(amax, Math.abs(x[i]));
    const d = amax / 127;
    const id = d ? 1 / d : 0;
    const o = b * (2 + QK);
    out.writeUInt16LE(toHalf(d), o);
    for (let i = 0; i < QK; i++) {
      const v = x[i] * id; // round half away from zero, like C's roundf
      q[o + 2 + i] = Math.sign(v) * Math.round(Math.abs(v));
    }
  }
  return out;
}

// --- GGUF header pieces ---
class Bytes {
  constructor() { this.parts = []; this.length = 0; }
  push(b) { this.parts.push(b); this.length += b.length; }
  num(method, size, v) { const b = Buffer.alloc(size); b[method](v, 0); this.push(b); }
  u32(v) { this.num("writeUInt32LE", 4, v); }
  i32(v) { this.num("writeInt32LE", 4, v); }
  u64(v) { this.num("writeBigUInt64LE", 8, BigInt(v)); }
  f32(v) { this.num("writeFloatLE", 4, v); }
  str(s) { const b = Buffer.from(s, "utf8"); this.u64(b.length); this.push(b); }
  value(type, v) {
    if (type === T.U32) this.u32(v);
    else if (type === T.I32) this.i32(v);
    else if (type === T.F32) this.f32(v);
    else if (type === T.BOOL) this.push(Buffer.from([v ? 1 : 0]));
    else if (type === T.STRING) this.str(v);
    else throw new Error(`value type ${type}`);
  }
  toBuffer() { return Buffer.concat(this.parts, this.length); }
}

const alignUp = (n) => Math.ceil(n / ALIGN) * ALIGN;

function tokenizerMetadata(dir, nVocab) {
  const tok = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const tokens = new Array(nVocab);
  const types = new Array(nVocab).fill(1); // 1 = normal
  for (const [t, id] of Object.entries(tok.model.vocab)) tokens[id] = t;
  for (const t of tok.added_tokens ?? []) {
    tokens[t.id] = t.content;
    if (t.special) types[t.id] = 3; // 3 = control, e.g. <|endoftext|>
  }
  // Rows of the embedding past the tokenizer's vocabulary (padding) get names.
  for (let i = 0; i < nVocab; i++) if (tokens[i] === undefined) { tokens[i] = `[PAD${i}]`; types[i] = 5; } // 5 = unused
  // tokenizer.json holds merges as "a b" strings or, in newer files, ["a", "b"] pairs.
  const merges = tok.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m));
  return { tokens, types, merges };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [dir, outPath] = args.pos;
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, "config.json"), "utf8"));
  const st = openSafetensors(path.join(dir, "model.safetensors"));
  const nEmbd = cfg.n_embd, nLayer = cfg.n_layer;
  const nFF = cfg.n_inner ?? 4 * nEmbd;
  const nVocab = cfg.vocab_size;
  const bos = cfg.bos_token_id ?? 50256, eos = cfg.eos_token_id ?? 50256;

  // The tensors: GGUF name, safetensors name, and whether it is a Conv1D weight
  // (transposed) and a matmul weight (quantized in q8_0). No output.weight:
  // llama.cpp's gpt2 loader falls back to token_embd when it is absent, which
  // is how GPT-2 ties them.
  const plan = [
    { name: "token_embd.weight", src: "wte.weight", quant: true },
    { name: "position_embd.weight", src: "wpe.weight" },
  ];
  for (let i = 0; i < nLayer; i++) {
    const h = `h.${i}.`, blk = `blk.${i}.`;
    // A LayerNorm (weight, bias) or a Conv1D layer (weight, bias): GGUF name <- GPT-2 name.
    const norm = (to, from) => [
      { name: `${blk}${to}.weight`, src: `${h}${from}.weight` },
      { name: `${blk}${to}.bias`, src: `${h}${from}.bias` },
    ];
    const conv1d = (to, from) => [
      { name: `${blk}${to}.weight`, src: `${h}${from}.weight`, conv1d: true, quant: true },
      { name: `${blk}${to}.bias`, src: `${h}${from}.bias` },
    ];
    plan.push(
      ...norm("attn_norm", "ln_1"),
      ...conv1d("attn_qkv", "attn.c_attn"),
      ...conv1d("attn_output", "attn.c_proj"),
      ...norm("ffn_norm", "ln_2"),
      ...conv1d("ffn_up", "mlp.c_fc"),
      ...conv1d("ffn_down", "mlp.c_proj"),
    );
  }
  plan.push(
    { name: "output_norm.weight", src: "ln_f.weight" },
    { name: "output_norm.bias", src: "ln_f.bias" },
  );
  // An untied lm_head (not GPT-2's usual layout) is kept as output.weight.
  if (st.has("lm_head.weight") && cfg.tie_word_embeddings === false)
    plan.push({ name: "output.weight", src: "lm_head.weight", quant: true });

  // Shapes come from the safetensors header, so the offsets are known before any data is read.
  let offset = 0;
  for (const t of plan) {
    t.type = args.type === "q8_0" && t.quant ? "q8_0" : "f32";
    let shape = st.shape(t.src);
    if (t.conv1d) shape = [shape[1], shape[0]];
    t.shape = shape; // row-major, after the transpose
    t.dims = [...shape].reverse(); // ggml order: ne0 is the contiguous axis
    const n = shape.reduce((a, b) => a * b, 1);
    if (t.type === "q8_0" && shape[shape.length - 1] % QK) throw new Error(`${t.name}: row not a multiple of ${QK}`);
    t.bytes = t.type === "q8_0" ? (n / QK) * (2 + QK) : n * 4;
    t.offset = offset;
    offset = alignUp(offset + t.bytes);
  }

  const { tokens, types, merges } = tokenizerMetadata(dir, nVocab);
  const kvs = [
    ["general.architecture", T.STRING, "gpt2"],
    ["general.name", T.STRING, path.basename(path.resolve(dir))],
    ["general.alignment", T.U32, ALIGN],
    ["general.file_type", T.U32, FILE_TYPE[args.type]],
    ["gpt2.context_length", T.U32, cfg.n_positions],
    ["gpt2.embedding_length", T.U32, nEmbd],
    ["gpt2.feed_forward_length", T.U32, nFF],
    ["gpt2.block_count", T.U32, nLayer],
    ["gpt2.attention.head_count", T.U32, cfg.n_head],
    ["gpt2.attention.layer_norm_epsilon", T.F32, cfg.layer_norm_epsilon ?? 1e-5],
    ["tokenizer.ggml.model", T.STRING, "gpt2"],
    ["tokenizer.ggml.pre", T.STRING, "gpt-2"],
    ["tokenizer.ggml.tokens", T.ARRAY, [T.STRING, tokens]],
    ["tokenizer.ggml.token_type", T.ARRAY, [T.I32, types]],
    ["tokenizer.ggml.merges", T.ARRAY, [T.STRING, merges]],
    ["tokenizer.ggml.bos_token_id", T.U32, bos],
    ["tokenizer.ggml.eos_token_id", T.U32, eos],
    ["tokenizer.ggml.add_bos_token", T.BOOL, false], // GPT-2 prepends nothing
  ];

  const head = new Bytes();
  head.push(Buffer.from("GGUF", "ascii"));
  head.u32(3);
  head.u64(plan.length);
  head.u64(kvs.length);
  for (const [key, type, v] of kvs) {
    head.str(key);
    head.u32(type);
    if (type !== T.ARRAY) { head.value(type, v); continue; }
    const [elemType, items] = v;
    head.u32(elemType);
    head.u64(items.length);
    for (const item of items) head.value(elemType, item);
  }
  for (const t of plan) {
    head.str(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(GGML[t.type]);
    head.u64(t.offset);
  }

  // Stream it out: one tensor in memory at a time, honouring backpressure.
  const out = fs.createWriteStream(outPath);
  const write = async (buf) => { if (!out.write(buf)) await once(out, "drain"); };
  await write(head.toBuffer());
  await write(Buffer.alloc(alignUp(head.length) - head.length));
  let pos = 0;
  for (const t of plan) {
    let w = st.load(t.src);
    if (t.conv1d) w = transpose(w);
    if (w.shape.join() !== t.shape.join()) throw new Error(`${t.src}: shape ${w.shape}, expected ${t.shape}`);
    const bytes = t.type === "q8_0" ? quantizeQ8_0(w.data) : Buffer.from(w.data.buffer, 0, w.data.byteLength);
    await write(Buffer.alloc(t.offset - pos)); // padding after the previous tensor
    await write(bytes);
    pos = t.offset + bytes.length;
  }
  out.end();
  await once(out, "finish");
  const size = fs.statSync(outPath).size;
  console.error(`wrote ${outPath}: ${plan.length} tensors, ${args.type}, ${(size / 1e6).toFixed(1)} MB`);
}

main().catch((e) => { console.error(e.message ?? e); process.exit(1); });
