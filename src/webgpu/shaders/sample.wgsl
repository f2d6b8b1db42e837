// Next-token sampling, one workgroup of 256 lanes per row of logits: the
// steps of forge/ops/sample.h. Thresholds come from bitwise searches over
// order-preserving u32 keys of the logits, one parallel count or sum per
// bit, instead of a sort. Sums are lane-strided then tree-combined
// (wg_sum, wg_sum_u32 of reduce_tree.wgsl, which follows), in the order the
// CPU kernel (src/cpu/sample.cpp) reproduces. Preceded by philox.wgsl (the
// random draw) and argmax.wgsl (the greedy scan, WG, SCAN and the reduction
// arrays).
struct Params {
  rows: u32,       // rows in this dispatch
  vocab: u32,
  greedy: u32,
  top_k: u32,      // 0: off
  inv_temp: f32,
  top_p: f32,      // >= 1: off
  k0: u32,
  k1: u32,
  step: u32,
  row_base: u32,   // global row of this dispatch's first row (Philox counter, ids index)
  index_bits: u32,
  min_p: f32,      // 0: off
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> z: array<f32>;          // [rows, vocab]
@group(0) @binding(2) var<storage, read_write> w: array<f32>;    // [rows, vocab] scratch weights
@group(0) @binding(3) var<storage, read_write> ids: array<u32>;  // [all rows]


var<private> z_base: u32;

fn z_at(i: u32) -> f32 {
  return z[z_base + i];
}

// The weight of element k after top-p (threshold key tp) and min-p.
fn kept_weight(k: u32, tp: u32) -> f32 {
  let x = w[k];
  return select(0.0, x, order_key(z[k]) >= tp && x >= p.min_p);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.y * nwg.x + wg.x;
  let live = row < p.rows;  // every lane of the workgroup takes part in the barriers
  let v = select(0u, p.vocab, live);
  let base = row * p.vocab;

  // The first index of the largest logit.
  z_base = base;
  let lane = lane_first_max(lid, 0u, v);
  let top = argmax_key(lid, lane.x, lane.y);
  let best = top.y;
  // A NaN or +inf: no token (the draw below runs on, its result unused).
  let finite = top.x < KEY_POS_INF;
  if (p.greedy != 0u) {
    if (live && lid == 0u) {
      ids[p.row_base + row] = select(NO_TOKEN, best, finite);
    }
    return;
  }

  // Top-k: tk is the k-th largest key; ties at tk are kept below index jcut.
  var tk = 0u;
  var jcut = v;
  if (p.top_k != 0u) {
    for (var b = 0u; b < 32u; b++) {
      let cand = tk | (1u << (31u - b));
      var c = 0u;
      for (var i = lid; i < v; i += WG) {
        c += select(0u, 1u, order_key(z[base + i]) >= cand);
      }
      if (wg_sum_u32(c, lid) >= p.top_k) {
        tk = cand;
      }
    }
    var above = 0u;
    for (var i = lid; i < v; i += WG) {
      above += select(0u, 1u, order_key(z[base + i]) > tk);
    }
    let need = p.top_k - wg_sum_u32(above, lid);
    var j = 0u;
    for (var b = 0u; b < p.index_bits; b++) {
      let cand = j | (1u << (p.index_bits - 1u - b));
      var c = 0u;
      for (var i = lid; i < min(v, cand); i += WG) {
        c += select(0u, 1u, order_key(z[base + i]) == tk);
      }
      if (wg_sum_u32(c, lid) <= need && cand <= v) {
        j = cand;
      }
    }
    jcut = j;
  }

  let m = z[base + best] * p.inv_temp;
  var total = 0.0;
  for (var i = lid; i < v; i += WG) {
    let k = order_key(z[base + i]);
    let kept = k > tk || (k == tk && i < jcut);
    let e = select(0.0, exp(z[base + i] * p.inv_temp - m), kept);
    w[base + i] = e;
    total += e;
  }
  storageBarrier();

  // Top-p: the highest key threshold whose kept weight reaches top_p of the total.
  var tp = 0u;
  if (p.top_p < 1.0) {
    let goal = p.top_p * wg_sum(total, lid);
    for (var b = 0u; b < 32u; b++) {
      let cand = tp | (1u << (31u - b));
      var s = 0.0;
      for (var i = lid; i < v; i += WG) {
        s += select(0.0, w[base + i], order_key(z[base + i]) >= cand);
      }
      if (wg_sum(s, lid) >= goal) {
        tp = cand;
      }
    }
  }

  // Min-p: w is the probability over the largest one's (1 at the argmax).
  var kept_total = 0.0;
  for (var i = lid; i < v; i += WG) {
    kept_total += kept_weight(base + i, tp);
  }
  let word = philox_word0(p.step, p.row_base + row, p.k0, p.k1);
  let r = f32(word >> 8u) * (1.0 / 16777216.0) * wg_sum(kept_total, lid);
  var j = 0u;
  for (var b = 0u; b < p.index_bits; b++) {
    let cand = j | (1u << (p.index_bits - 1u - b));
    var s = 0.0;
    for (var i = lid; i < min(v, cand); i += WG) {
      s += kept_weight(base + i, tp);
    }
    if (wg_sum(s, lid) <= r && cand <= v) {
      j = cand;
    }
  }
  if (live && lid == 0u) {
    ids[p.row_base + row] = select(NO_TOKEN, select(best, j, j < v), finite);
  }
}
