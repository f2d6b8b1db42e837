// Flash attention backward, pass 2, register-tiled: grad_q. One workgroup of
// BK * BQ / 16 invocations per (batch, head, block of BK queries): the
// transpose of flash_bwd_dkv_tiled, with queries in the place of keys. The
// block's Q (scaled) and dO stay in workgroup memory; per tile of BQ keys:
//   S = Q K^T, dP = dO V^T          [BK, BQ], in registers
//   dS = exp(S + mask - lse) (dP z - delta)
//   dQ += dS K                      [BK, D], in registers
// Invocation (ti, tj) owns queries ti + TI r (r < 4) in both halves, keys
// tj + TJ c (c < 4) of the scores and vec4 columns tj + TJ e of dQ. Three
// barriers per key tile. Needs HEAD_DIM % 4 == 0. Preceded by flash_params,
// philox and flash_common; the host sizes the tiles as for grad_k / grad_v.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;
@group(0) @binding(2) var<storage, read> k: array<vec4f>;
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<vec4f>;
@group(0) @binding(6) var<storage, read> stats: array<f32>;       // [B, H, Sq, 2]: lse, delta
@group(0) @binding(7) var<storage, read_write> dq: array<vec4f>;

override BK: u32;          // queries per workgroup: 16 or 32
override BQ: u32;          // keys per tile: 16 or 32
override STRIDE: u32;      // vec4s per staged row of Q, dO, K and V: D / 4 made odd
override SM_VEC4: u32;

const MAX_DC: u32 = 4u;    // largest ceil(D / 4 / TJ)

// Q [BK, STRIDE], dO [BK, STRIDE], K [BQ, STRIDE], V [BQ, STRIDE], then dS
// [BQ, BK / 4] (vec4 over the four queries of one ti).
var<workgroup> sm: array<vec4f, SM_VEC4>;

@compute @workgroup_size(BK * BQ / 16u)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let nt = BK * BQ / 16u;
  let tin = BK / 4u;
  let tjn = BQ / 4u;
  let d4 = HEAD_DIM / 4u;
  let dc_n = (d4 + tjn - 1u) / tjn;
  let o_off = BK * STRIDE;
  let k_off = 2u * BK * STRIDE;
  let v_off = k_off + BQ * STRIDE;
  let s_off = v_off + BQ * STRIDE;

  let heads = p.batch * p.heads;
  let qtiles = (p.seq_q + BK - 1u) / BK;
  let w = wg.y * nwg.x + wg.x;
  if (w >= heads * qtiles) {
    return;
  }
  // The last query blocks see the most keys under a causal mask: start them first.
  let bh = w % heads;
  let i0 = (qtiles - 1u - w / heads) * BK;
  let b = bh / p.heads;
  let h = bh % p.heads;
  let g = h / (p.heads / p.kv_heads);
  let ti = lid / tjn;
  let tj = lid % tjn;

  let q_stride = p.heads * d4;
  for (var e = lid; e < BK * d4; e += nt) {
    let row = e / d4;
    let col = e % d4;
    var qx = vec4f(0.0);
    var ox = vec4f(0.0);
    if (i0 + row < p.seq_q) {
      let at = (b * p.seq_q + i0 + row) * q_stride + h * d4 + col;
      qx = q[at] * p.scale;
      ox = dout[at];
    }
    sm[row * STRIDE + col] = qx;
    sm[o_off + row * STRIDE + col] = ox;
  }
  // Per owned query r: visible keys [lo, hi) (empty past seq_q), lse, delta.
  var lo: array<u32, 4>;
  var hi: array<u32, 4>;
  var lse: array<f32, 4>;
  var delta: array<f32, 4>;
  for (var r = 0u; r < 4u; r++) {
    let i = i0 + ti + tin * r;
    let ic = min(i, p.seq_q - 1u);
    lo[r] = key_lo(ic);
    hi[r] = select(0u, key_hi(ic), i < p.seq_q);
    lse[r] = stats[2u * (bh * p.seq_q + ic)];
    delta[r] = stats[2u * (bh * p.seq_q + ic) + 1u];
  }
  var acc: array<vec4f, 4 * MAX_DC>;
  for (var x = 0u; x < 4u * MAX_DC; x++) {
    acc[x] = vec4f(0.0);
  }
  // Keys any query of the block sees (key_lo and key_hi grow with i).
  let wg_lo = key_lo(i0);
  let wg_hi = key_hi(min(i0 + BK, p.seq_q) - 1u);
  let kv_stride = p.kv_heads * d4;
  let kv_base = b * p.seq_k * kv_stride + g * d4;

  for (var t0 = wg_lo; t0 < wg_hi; t0 += BQ) {
    let n = min(BQ, wg_hi - t0);
    // Rows n..BQ are zeros, so that dS = 0 never meets stale values.
    for (var e = lid; e < BQ * d4; e += nt) {
      let row = e / d4;
      let col = e % d4;
      var kx = vec4f(0.0);
      var vx = vec4f(0.0);
      if (row < n) {
        let at = kv_base + (t0 + row) * kv_stride + col;
        kx = k[at];
        vx = v[at];
      }
      sm[k_off + row * STRIDE + col] = kx;
      sm[v_off + row * STRIDE + col] = vx;
    }
    workgroupBarrier();

    // s[r * 4 + c], dp[r * 4 + c]: query ti + TI r against key tj + TJ c.
    var s: array<f32, 16>;
    var dp: array<f32, 16>;
    for (var x = 0u; x < 16u; x++) {
      s[x] = 0.0;
      dp[x] = 0.0;
    }
    for (var d = 0u; d < d4; d++) {
      var kv: array<vec4f, 4>;
      var vv: array<vec4f, 4>;
      for (var c = 0u; c < 4u; c++) {
        kv[c] = sm[k_off + (tj + tjn * c) * STRIDE + d];
        vv[c] = sm[v_off + (tj + tjn * c) * STRIDE + d];
      }
      for (var r = 0u; r < 4u; r++) {
        let qv = sm[(ti + tin * r) * STRIDE + d];
        let ov = sm[o_off + (ti + tin * r) * STRIDE + d];
        for (var c = 0u; c < 4u; c++) {
          s[r * 4u + c] += dot(qv, kv[c]);
          dp[r * 4u + c] += dot(ov, vv[c]);
        }
      }
    }
    for (var c = 0u; c < 4u; c++) {
      let t = tj + tjn * c;
      let j = t0 + t;
      var dsw = vec4f(0.0);
      for (var r = 0u; r < 4u; r++) {
        let i = i0 + ti + tin * r;
        if (t < n && j >= lo[r] && j < hi[r]) {
          let x = s[r * 4u + c] + mask_at(b, h, i, j);
          if (x > MASKED) {
            dsw[r] = exp(x - lse[r]) * (dp[r * 4u + c] * keep_factor(b, h, i, j) - delta[r]);
          }
        }
      }
      sm[s_off + t * tin + ti] = dsw;
    }
    workgroupBarrier();

    for (var t = 0u; t < n; t++) {
      let dsw = sm[s_off + t * tin + ti];
      for (var e = 0u; e < dc_n; e++) {
        let col = tj + tjn * e;
        if (col < d4) {
          let kx = sm[k_off + t * STRIDE + col];
          for (var r = 0u; r < 4u; r++) {
            acc[r * MAX_DC + e] += dsw[r] * kx;
          }
        }
      }
    }
    workgroupBarrier();  // before the next tile overwrites K, V and dS
  }

  for (var r = 0u; r < 4u; r++) {
    let i = i0 + ti + tin * r;
    if (i < p.seq_q) {
      let obase = ((b * p.seq_q + i) * p.heads + h) * d4;
      for (var e = 0u; e < dc_n; e++) {
        let col = tj + tjn * e;
        if (col < d4) {
          dq[obase + col] = acc[r * MAX_DC + e] * p.scale;
        }
      }
    }
  }
}
