// The repeat penalty of sample (forge/ops/sample.h, step 0), one workgroup of
// 256 lanes per row: the row of logits is copied, then each id of the row's
// recent window (< vocab) gets its logit penalised from the unpenalised value,
// so ids occurring twice write the same value. As src/cpu/sample.cpp.
struct Params {
  rows: u32,      // rows in this dispatch
  vocab: u32,
  window: u32,    // recent ids per row
  row_base: u32,  // global row of this dispatch's first row (recent is bound whole)
  up: f32,        // repeat_penalty, for z < 0
  down: f32,      // f32(1 / repeat_penalty), for z > 0
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> z: array<f32>;        // [rows, vocab]
@group(0) @binding(2) var<storage, read> recent: array<u32>;   // [all rows, window]
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // [rows, vocab]

const WG: u32 = 256u;

fn penalized(x: f32) -> f32 {
  if (x > 0.0) {
    return x * p.down;
  }
  if (x < 0.0) {
    return x * p.up;
  }
  return x;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.y * nwg.x + wg.x;
  let live = row < p.rows;  // every lane of the workgroup reaches the barrier
  let v = select(0u, p.vocab, live);
  let n = select(0u, p.window, live);
  let base = row * p.vocab;
  for (var i = lid; i < v; i += WG) {
    y[base + i] = z[base + i];
  }
  storageBarrier();
  let ids = (p.row_base + row) * p.window;
  for (var j = lid; j < n; j += WG) {
    let id = recent[ids + j];
    if (id < v) {
      y[base + id] = penalized(z[base + id]);
    }
  }
}
