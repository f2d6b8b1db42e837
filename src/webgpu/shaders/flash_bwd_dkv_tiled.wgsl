// Flash attention backward, pass 3, register-tiled: grad_k and grad_v. One
// workgroup of BK * BQ / 16 invocations per (batch, query head, block of BK
// keys) when SPLIT_HEADS (each query head of a GQA group writes its own
// partial, which flash_bwd_sum adds up in order: deterministic, no atomics),
// else per (batch, KV head, block) looping over the group's query heads. The
// block's K (scaled) and V stay in workgroup memory; per tile of BQ queries:
//   S^T = K Q^T, dP^T = V dO^T      [BK, BQ], in registers
//   P = exp(S + mask - lse), dS = P (dP z - delta)   (z: the dropout factor)
//   dV += (P z)^T dO, dK += dS^T Q  [BK, D], in registers
// The invocations form a (BK / 4) x (BQ / 4) grid: (tk, tq) owns keys
// tk + TK r (r < 4) in both halves, queries tq + TQ c (c < 4) of the scores
// and vec4 columns tq + TQ e (e < ceil(D / 4 / TQ)) of the gradients. Three
// barriers per query tile. Needs HEAD_DIM % 4 == 0. Preceded by flash_params,
// philox and flash_common; the host (webgpu/flash_tiling.h) sizes the tiles.
// Where the scores may be written out whole, flash_bwd_scores and products
// take the backward instead (webgpu/attention.cpp).
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;
@group(0) @binding(2) var<storage, read> k: array<vec4f>;
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<vec4f>;
@group(0) @binding(6) var<storage, read> stats: array<f32>;        // [B, H, Sq, 2]: lse, delta
@group(0) @binding(7) var<storage, read_write> dk: array<vec4f>;  // [B, Sk, H or Hkv, D]
@group(0) @binding(8) var<storage, read_write> dv: array<vec4f>;

override BK: u32;          // keys per workgroup: 16 or 32
override BQ: u32;          // queries per tile: 16 or 32
override STRIDE: u32;      // vec4s per staged row of K, V, Q and dO: D / 4 made odd
override SM_VEC4: u32;
override SPLIT_HEADS: bool;

const MAX_DC: u32 = 4u;    // largest ceil(D / 4 / TQ)

// K [BK, STRIDE], V [BK, STRIDE], Q [BQ, STRIDE], dO [BQ, STRIDE], then P z
// and dS [BQ, BK / 4] (vec4 over the four keys of one tk).
var<workgroup> sm: array<vec4f, SM_VEC4>;

@compute @workgroup_size(BK * BQ / 16u)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let nt = BK * BQ / 16u;
  let tkn = BK / 4u;
  let tqn = BQ / 4u;
  let d4 = HEAD_DIM / 4u;
  let dc_n = (d4 + tqn - 1u) / tqn;
  let v_off = BK * STRIDE;
  let q_off = 2u * BK * STRIDE;
  let o_off = q_off + BQ * STRIDE;
  let p_off = o_off + BQ * STRIDE;
  let s_off = p_off + BQ * tkn;

  let group = p.heads / p.kv_heads;
  let out_heads = select(p.kv_heads, p.heads, SPLIT_HEADS);
  let rows = p.batch * out_heads;
  let ktiles = (p.seq_k + BK - 1u) / BK;
  let w = wg.y * nwg.x + wg.x;
  if (w >= rows * ktiles) {
    return;
  }
  // The first key blocks see the most queries under a causal mask: start them first.
  let bo = w % rows;
  let j0 = (w / rows) * BK;
  let b = bo / out_heads;
  let ho = bo % out_heads;
  let h_first = select(ho * group, ho, SPLIT_HEADS);
  let h_count = select(group, 1u, SPLIT_HEADS);
  let g = h_first / group;
  let tk = lid / tqn;
  let tq = lid % tqn;

  let kv_stride = p.kv_heads * d4;
  let kv_base = b * p.seq_k * kv_stride + g * d4;
  for (var e = lid; e < BK * d4; e += nt) {
    let row = e / d4;
    let col = e % d4;
    var kx = vec4f(0.0);
    var vx = vec4f(0.0);
    if (j0 + row < p.seq_k) {
      let at = kv_base + (j0 + row) * kv_stride + col;
      kx = k[at] * p.scale;
      vx = v[at];
    }
    sm[row * STRIDE + col] = kx;
    sm[v_off + row * STRIDE + col] = vx;
  }

  var gk: array<vec4f, 4 * MAX_DC>;
  var gv: array<vec4f, 4 * MAX_DC>;
  for (var x = 0u; x < 4u * MAX_DC; x++) {
    gk[x] = vec4f(0.0);
    gv[x] = vec4f(0.0);
  }
  // Queries that can see a key of the block: causal needs pos(i) >= j0,
  // a window needs pos(i) < j_last + window.
  let j_last = min(j0 + BK, p.seq_k) - 1u;
  var i_lo = 0u;
  if (p.causal != 0u && j0 > p.kv_offset) {
    i_lo = min(p.seq_q, j0 - p.kv_offset);
  }
  var i_hi = p.seq_q;
  if (p.window != 0u) {
    i_hi = select(0u, min(p.seq_q, j_last + p.window - p.kv_offset), j_last + p.window > p.kv_offset);
  }
  let q_stride = p.heads * d4;

  for (var hh = 0u; hh < h_count; hh++) {
    let h = h_first + hh;
    let bh = b * p.heads + h;
    for (var t0 = i_lo; t0 < i_hi; t0 += BQ) {
      let n = min(BQ, i_hi - t0);
      // Rows n..BQ are zeros, so that P = 0 never meets stale values.
      for (var e = lid; e < BQ * d4; e += nt) {
        let row = e / d4;
        let col = e % d4;
        var qx = vec4f(0.0);
        var ox = vec4f(0.0);
        if (row < n) {
          let at = (b * p.seq_q + t0 + row) * q_stride + h * d4 + col;
          qx = q[at];
          ox = dout[at];
        }
        sm[q_off + row * STRIDE + col] = qx;
        sm[o_off + row * STRIDE + col] = ox;
      }
      workgroupBarrier();

      // s[r * 4 + c], dp[r * 4 + c]: key tk + TK r against query tq + TQ c.
      var s: array<f32, 16>;
      var dp: array<f32, 16>;
      for (var x = 0u; x < 16u; x++) {
        s[x] = 0.0;
        dp[x] = 0.0;
      }
      for (var d = 0u; d < d4; d++) {
        var qv: array<vec4f, 4>;
        var ov: array<vec4f, 4>;
        for (var c = 0u; c < 4u; c++) {
          qv[c] = sm[q_off + (tq + tqn * c) * STRIDE + d];
          ov[c] = sm[o_off + (tq + tqn * c) * STRIDE + d];
        }
        for (var r = 0u; r < 4u; r++) {
          let kv = sm[(tk + tkn * r) * STRIDE + d];
          let vv = sm[v_off + (tk + tkn * r) * STRIDE + d];
          for (var c = 0u; c < 4u; c++) {
            s[r * 4u + c] += dot(kv, qv[c]);
            dp[r * 4u + c] += dot(vv, ov[c]);
          }
        }
      }
      for (var c = 0u; c < 4u; c++) {
        let t = tq + tqn * c;
        let i = t0 + t;
        let ic = min(i, p.seq_q - 1u);
        let lse = stats[2u * (bh * p.seq_q + ic)];
        let delta = stats[2u * (bh * p.seq_q + ic) + 1u];
        let lo = key_lo(ic);
        let hi = select(0u, key_hi(ic), t < n);
        var pw = vec4f(0.0);
        var dsw = vec4f(0.0);
        for (var r = 0u; r < 4u; r++) {
          let j = j0 + tk + tkn * r;
          if (j >= lo && j < hi) {
            let x = s[r * 4u + c] + mask_at(b, h, i, j);
            if (x > MASKED) {
              let pr = exp(x - lse);
              let z = keep_factor(b, h, i, j);
              pw[r] = pr * z;
              dsw[r] = pr * (dp[r * 4u + c] * z - delta);
            }
          }
        }
        sm[p_off + t * tkn + tk] = pw;
        sm[s_off + t * tkn + tk] = dsw;
      }
      workgroupBarrier();

      for (var t = 0u; t < n; t++) {
        let pw = sm[p_off + t * tkn + tk];
        let dsw = sm[s_off + t * tkn + tk];
        for (var e = 0u; e < dc_n; e++) {
          let col = tq + tqn * e;
          if (col < d4) {
            let ov = sm[o_off + t * STRIDE + col];
            let qv = sm[q_off + t * STRIDE + col];
            for (var r = 0u; r < 4u; r++) {
              gv[r * MAX_DC + e] += pw[r] * ov;
              gk[r * MAX_DC + e] += dsw[r] * qv;
            }
          }
        }
      }
      workgroupBarrier();  // before the next tile overwrites Q, dO, P and dS
    }
  }

  for (var r = 0u; r < 4u; r++) {
    let j = j0 + tk + tkn * r;
    if (j < p.seq_k) {
      let obase = ((b * p.seq_k + j) * out_heads + ho) * d4;
      for (var e = 0u; e < dc_n; e++) {
        let col = tq + tqn * e;
        if (col < d4) {
          dk[obase + col] = gk[r * MAX_DC + e] * p.scale;
          dv[obase + col] = gv[r * MAX_DC + e];
        }
      }
    }
  }
}
