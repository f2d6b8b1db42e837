// Load figures for `forge serve` (not a test): C concurrent clients each send
// R streamed completions back to back; prints one JSON line per concurrency
// with the aggregate generated tokens/s, the time to first token and the
// inter-token latency (p50, p99). Plain fetch, no dependencies:
//
//   build/forge serve -m DIR --max-batch 32 --port 8080 &
//   node bench/serve_load.mjs http://127.0.0.1:8080 --clients 1,8,32 --requests 4 --tokens 64 [--temperature 0.8]
const args = process.argv.slice(2);
const base = args[0] ?? 'http://127.0.0.1:8080';
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const clients = opt('clients', '1,8,32').split(',').map(Number);
const perClient = Number(opt('requests', '4'));
const tokens = Number(opt('tokens', '64'));
const prompt = opt('prompt', 'Once upon a time');
const temperature = Number(opt('temperature', '0'));

const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

// One streamed request: arrival times of its tokens (ms since it was sent).
async function one(seed) {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: tokens, temperature, seed, stream: true }),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const times = [];
  const decoder = new TextDecoder();
  let buf = '';
  for await (const part of res.body) {
    buf += decoder.decode(part, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const line = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const ids = JSON.parse(line.slice(6)).choices[0]?.token_ids ?? [];
      for (let i = 0; i < ids.length; ++i) times.push(performance.now() - t0);
    }
  }
  return times;
}

await one(0);  // warm-up
for (const c of clients) {
  const ttft = [], itl = [];
  let generated = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async (_, k) => {
      for (let r = 0; r < perClient; ++r) {
        const times = await one(k * 1000 + r);
        generated += times.length;
        if (times.length) ttft.push(times[0]);
        for (let i = 1; i < times.length; ++i) itl.push(times[i] - times[i - 1]);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({
    clients: c,
    requests: c * perClient,
    generated_tokens: generated,
    tokens_per_s: +(generated / seconds).toFixed(1),
    ttft_ms: { p50: +pct(ttft, 50).toFixed(1), p99: +pct(ttft, 99).toFixed(1) },
    itl_ms: { p50: +pct(itl, 50).toFixed(2), p99: +pct(itl, 99).toFixed(2) },
  }));
}
