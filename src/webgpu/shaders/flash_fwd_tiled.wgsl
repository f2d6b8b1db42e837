// Flash attention forward (prefill), register-tiled: one workgroup of
// BQ * 4 invocations per (batch, head, block of BQ queries). The invocations
// form a (BQ / 4) x 16 grid: invocation (ty, tx) owns queries ty*4 .. ty*4+3
// and, of each key tile, keys tx + 16c (c < BK / 16) of the scores and vec4
// columns tx + 16e (e < ceil(D / 64)) of the output. Per key tile of BK keys:
// S = Q K^T from workgroup memory into registers, the row maxima reduced over
// the 16 invocations of a row, O and l rescaled once, P written to workgroup
// memory, O += P V. Needs HEAD_DIM % 4 == 0. Preceded by flash_params,
// philox and flash_common; the host (webgpu/flash_tiling.h) sizes the tiles
// and lays out `sm` so that it fits the device's workgroup storage.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;
@group(0) @binding(2) var<storage, read> k: array<vec4f>;
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4f>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

override BQ: u32;         // queries per workgroup: 16, 32 or 64
override BK: u32;         // keys per tile: 16, 32 or 64
override K_STRIDE: u32;   // vec4s per staged K row; odd, against bank conflicts
override ROW_STRIDE: u32; // vec4s per row of P and of the partials; odd likewise
override V_OFF: u32;      // vec4 offsets in `sm`; Q [BQ, D/4] starts at 0, K [BK, K_STRIDE] at BQ * D/4
override P_OFF: u32;
override RED_OFF: u32;
override SM_VEC4: u32;

const TX: u32 = 16u;      // invocations sharing a query row
const MAX_KC: u32 = 4u;   // largest BK / TX
const MAX_DC: u32 = 2u;   // largest ceil(D / 4 / TX)

// Q [BQ, D/4] (scaled), K tile [BK, K_STRIDE], V tile [BK, D/4], P tile
// [BK, ROW_STRIDE] (vec4 over the four rows of one ty), row partials
// [TX, ROW_STRIDE]; V or P reuses K's space, as the host decides.
var<workgroup> sm: array<vec4f, SM_VEC4>;

// Stages keys [t0, t0 + n) of K (of V if is_v) at sm[off + row * stride];
// rows n..BK are zeros, so that P = 0 never meets stale values.
fn stage_kv(is_v: bool, lid: u32, kv_base: u32, t0: u32, n: u32, off: u32, stride: u32) {
  let d4 = HEAD_DIM / 4u;
  let kv_stride = p.kv_heads * d4;
  for (var e = lid; e < BK * d4; e += BQ * 4u) {
    let row = e / d4;
    let col = e % d4;
    var x = vec4f(0.0);
    if (row < n) {
      let at = kv_base + (t0 + row) * kv_stride + col;
      if (is_v) {
        x = v[at];
      } else {
        x = k[at];
      }
    }
    sm[off + row * stride + col] = x;
  }
}

@compute @workgroup_size(BQ * 4u)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let qtiles = (p.seq_q + BQ - 1u) / BQ;
  let heads = p.batch * p.heads;
  let w = wg.y * nwg.x + wg.x;
  if (w >= heads * qtiles) {
    return;
  }
  // The last query blocks see the most keys under a causal mask: start them first.
  let bh = w % heads;
  let i0 = (qtiles - 1u - w / heads) * BQ;
  let b = bh / p.heads;
  let h = bh % p.heads;
  let g = h / (p.heads / p.kv_heads);
  let d4 = HEAD_DIM / 4u;
  let dc_n = (d4 + TX - 1u) / TX;
  let kc_n = BK / TX;
  let tx = lid % TX;
  let ty = lid / TX;
  let k_off = BQ * d4;

  for (var e = lid; e < BQ * d4; e += BQ * 4u) {
    let i = i0 + e / d4;
    var x = vec4f(0.0);
    if (i < p.seq_q) {
      x = q[((b * p.seq_q + i) * p.heads + h) * d4 + e % d4] * p.scale;
    }
    sm[e] = x;
  }

  // Per owned row r: visible keys [lo, hi) (empty past seq_q), running max m,
  // this invocation's share of the sum l, and the output columns o.
  var lo: array<u32, 4>;
  var hi: array<u32, 4>;
  var m = vec4f(NEG);
  var l = vec4f(0.0);
  var o: array<vec4f, 4 * MAX_DC>;
  for (var r = 0u; r < 4u; r++) {
    let i = i0 + ty * 4u + r;
    lo[r] = key_lo(min(i, p.seq_q - 1u));
    hi[r] = select(0u, key_hi(i), i < p.seq_q);
    for (var e = 0u; e < MAX_DC; e++) {
      o[r * MAX_DC + e] = vec4f(0.0);
    }
  }
  // Keys any query of the block sees (key_lo and key_hi grow with i): the
  // tiles outside are invisible to the whole block and skipped.
  let wg_lo = key_lo(i0);
  let wg_hi = key_hi(min(i0 + BQ, p.seq_q) - 1u);
  let kv_base = b * p.seq_k * p.kv_heads * d4 + g * d4;
  let v_shares_k = V_OFF == k_off;

  for (var t0 = wg_lo; t0 < wg_hi; t0 += BK) {
    let n = min(BK, wg_hi - t0);
    stage_kv(false, lid, kv_base, t0, n, k_off, K_STRIDE);
    if (!v_shares_k) {
      stage_kv(true, lid, kv_base, t0, n, V_OFF, d4);
    }
    workgroupBarrier();

    // s[r * MAX_KC + c]: score of row r with key t0 + tx + 16c.
    var s: array<f32, 4 * MAX_KC>;
    for (var x = 0u; x < 4u * MAX_KC; x++) {
      s[x] = 0.0;
    }
    for (var d = 0u; d < d4; d++) {
      var qv: array<vec4f, 4>;
      for (var r = 0u; r < 4u; r++) {
        qv[r] = sm[(ty * 4u + r) * d4 + d];
      }
      for (var c = 0u; c < kc_n; c++) {
        let kv = sm[k_off + (tx + TX * c) * K_STRIDE + d];
        for (var r = 0u; r < 4u; r++) {
          s[r * MAX_KC + c] += dot(qv[r], kv);
        }
      }
    }
    var mx = vec4f(NEG);
    for (var r = 0u; r < 4u; r++) {
      for (var c = 0u; c < kc_n; c++) {
        let j = t0 + tx + TX * c;
        var x = NEG;
        if (j >= lo[r] && j < hi[r]) {
          x = s[r * MAX_KC + c] + mask_at(b, h, i0 + ty * 4u + r, j);
          x = select(NEG, x, x > MASKED);
        }
        s[r * MAX_KC + c] = x;
        mx[r] = max(mx[r], x);
      }
    }
    sm[RED_OFF + tx * ROW_STRIDE + ty] = mx;
    workgroupBarrier();

    for (var t = 0u; t < TX; t++) {
      mx = max(mx, sm[RED_OFF + t * ROW_STRIDE + ty]);
    }
    let m_new = max(m, mx);
    let alpha = exp(m - m_new);  // 1 while nothing is visible yet (both NEG)
    m = m_new;
    l *= alpha;
    for (var c = 0u; c < kc_n; c++) {
      let j = t0 + tx + TX * c;
      var pw = vec4f(0.0);
      for (var r = 0u; r < 4u; r++) {
        let x = s[r * MAX_KC + c];
        if (x > MASKED) {
          let e = exp(x - m[r]);
          l[r] += e;
          pw[r] = e * keep_factor(b, h, i0 + ty * 4u + r, j);
        }
      }
      sm[P_OFF + (tx + TX * c) * ROW_STRIDE + ty] = pw;
    }
    if (v_shares_k) {
      stage_kv(true, lid, kv_base, t0, n, V_OFF, d4);  // K is read: its space takes V
    }
    workgroupBarrier();

    for (var r = 0u; r < 4u; r++) {
      for (var e = 0u; e < dc_n; e++) {
        o[r * MAX_DC + e] *= alpha[r];
      }
    }
    for (var j = 0u; j < BK; j++) {
      let pw = sm[P_OFF + j * ROW_STRIDE + ty];
      for (var e = 0u; e < dc_n; e++) {
        let col = tx + TX * e;
        if (col < d4) {
          let vv = sm[V_OFF + j * d4 + col];
          for (var r = 0u; r < 4u; r++) {
            o[r * MAX_DC + e] += pw[r] * vv;
          }
        }
      }
    }
    workgroupBarrier();  // before the next tile overwrites K, V, P and the partials
  }

  // l summed over the 16 invocations of each row.
  sm[RED_OFF + tx * ROW_STRIDE + ty] = l;
  workgroupBarrier();
  l = vec4f(0.0);
  for (var t = 0u; t < TX; t++) {
    l += sm[RED_OFF + t * ROW_STRIDE + ty];
  }
  for (var r = 0u; r < 4u; r++) {
    let i = i0 + ty * 4u + r;
    if (i < p.seq_q) {
      let inv = select(0.0, 1.0 / l[r], l[r] > 0.0);
      let obase = ((b * p.seq_q + i) * p.heads + h) * d4;
      for (var e = 0u; e < dc_n; e++) {
        let col = tx + TX * e;
        if (col < d4) {
          out[obase + col] = o[r * MAX_DC + e] * inv;
        }
      }
      if (tx == 0u) {
        lse[bh * p.seq_q + i] = select(p.neg_inf, m[r] + log(l[r]), l[r] > 0.0);
      }
    }
  }
}
