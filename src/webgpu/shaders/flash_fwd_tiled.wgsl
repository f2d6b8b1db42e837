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
// The next tile's K and V loaded into registers while this one is computed
// and stored after it (at most two vec4s of each an invocation; V in its own
// space), so that no tile waits on global memory. The host decides.
override PREFETCH: bool = false;

const TX: u32 = 16u;      // invocations sharing a query row; BK / TX <= 4 key columns, ceil(D / 4 / TX) <= 2 vec4s

// Q [BQ, D/4] (scaled), K tile [BK, K_STRIDE], V tile [BK, D/4], P tile
// [BK, ROW_STRIDE] (vec4 over the four rows of one ty), row partials
// [TX, ROW_STRIDE]; V or P reuses K's space, as the host decides.
var<workgroup> sm: array<vec4f, SM_VEC4>;

// Stages keys [t0, t0 + n) of K (of V if is_v) at sm[off + row * stride];
// rows n..BK are zeros, so that P = 0 never meets stale values.
fn stage_kv(is_v: bool, lid: u32, kv_base: u32, t0: u32, n: u32, off: u32, stride: u32) {
  for (var e = lid; e < BK * (HEAD_DIM / 4u); e += BQ * 4u) {
    kv_store(kv_element(is_v, kv_base, t0, n, e), e, off, stride);
  }
}

// Element e (row e / d4, column e % d4) of the tile of K (of V if is_v) at
// keys [t0, t0 + n); zeros past n.
fn kv_element(is_v: bool, kv_base: u32, t0: u32, n: u32, e: u32) -> vec4f {
  let d4 = HEAD_DIM / 4u;
  let row = e / d4;
  if (row >= n) {
    return vec4f(0.0);
  }
  let at = kv_base + (t0 + row) * (p.kv_row / 4u) + e % d4;
  if (is_v) {
    return v[at];
  }
  return k[at];
}

// Element e of a tile, loaded by kv_element, to its place in `sm` (row e / d4
// at off + row * stride); nothing past the tile's BK rows.
fn kv_store(x: vec4f, e: u32, off: u32, stride: u32) {
  let d4 = HEAD_DIM / 4u;
  if (e < BK * d4) {
    sm[off + (e / d4) * stride + e % d4] = x;
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
      x = q[(b * p.seq_q + i) * (p.q_row / 4u) + h * d4 + e % d4] * p.scale;
    }
    sm[e] = x;
  }

  // Per owned row r (the components of a vec4): visible keys [lo, hi)
  // (empty past seq_q), running max m, this invocation's share of the sum
  // l. The scores s_c (key t0 + tx + 16c) and the output columns (o_e: its
  // column r is row r's vec4 e) are vec4s and matrices rather than indexed
  // arrays, so that the compiler keeps them in registers.
  var lo = vec4u(0u);
  var hi = vec4u(0u);
  for (var r = 0u; r < 4u; r++) {
    let i = i0 + ty * 4u + r;
    lo[r] = key_lo(min(i, p.seq_q - 1u));
    hi[r] = select(0u, key_hi(i), i < p.seq_q);
  }
  var m = vec4f(NEG);
  var l = vec4f(0.0);
  var o0 = mat4x4f();
  var o1 = mat4x4f();
  // Keys any query of the block sees (key_lo and key_hi grow with i): the
  // tiles outside are invisible to the whole block and skipped.
  let wg_lo = key_lo(i0);
  let wg_hi = key_hi(min(i0 + BQ, p.seq_q) - 1u);
  let kv_base = b * p.seq_k * (p.kv_row / 4u) + g * d4;
  let v_shares_k = V_OFF == k_off;
  let q_row = ty * 4u * d4;
  // Whether this invocation owns output vec4 columns tx and tx + 16.
  let in0 = tx < d4;
  let in1 = dc_n > 1u && tx + TX < d4;

  let nt = BQ * 4u;
  if (PREFETCH && wg_lo < wg_hi) {
    let n = min(BK, wg_hi - wg_lo);
    stage_kv(false, lid, kv_base, wg_lo, n, k_off, K_STRIDE);
    stage_kv(true, lid, kv_base, wg_lo, n, V_OFF, d4);
  }
  for (var t0 = wg_lo; t0 < wg_hi; t0 += BK) {
    let n = min(BK, wg_hi - t0);
    if (!PREFETCH) {
      stage_kv(false, lid, kv_base, t0, n, k_off, K_STRIDE);
      if (!v_shares_k) {
        stage_kv(true, lid, kv_base, t0, n, V_OFF, d4);
      }
    }
    workgroupBarrier();
    // The next tile's K and V, in flight while this tile is computed.
    let t1 = t0 + BK;
    let more = PREFETCH && t1 < wg_hi;
    var nk0 = vec4f(0.0);
    var nk1 = vec4f(0.0);
    var nv0 = vec4f(0.0);
    var nv1 = vec4f(0.0);
    if (more) {
      let n1 = min(BK, wg_hi - t1);
      nk0 = kv_element(false, kv_base, t1, n1, lid);
      nv0 = kv_element(true, kv_base, t1, n1, lid);
      if (lid + nt < BK * d4) {
        nk1 = kv_element(false, kv_base, t1, n1, lid + nt);
        nv1 = kv_element(true, kv_base, t1, n1, lid + nt);
      }
    }

    // s_c[r]: score of row r with key t0 + tx + 16c; k * qt = (dot(k, q_r))_r.
    var s0 = vec4f(0.0);
    var s1 = vec4f(0.0);
    var s2 = vec4f(0.0);
    var s3 = vec4f(0.0);
    let k_row = k_off + tx * K_STRIDE;
    for (var d = 0u; d < d4; d++) {
      let qt = mat4x4f(sm[q_row + d], sm[q_row + d4 + d], sm[q_row + 2u * d4 + d], sm[q_row + 3u * d4 + d]);
      s0 += sm[k_row + d] * qt;
      if (kc_n > 1u) {
        s1 += sm[k_row + TX * K_STRIDE + d] * qt;
      }
      if (kc_n > 2u) {
        s2 += sm[k_row + 2u * TX * K_STRIDE + d] * qt;
        s3 += sm[k_row + 3u * TX * K_STRIDE + d] * qt;
      }
    }
    s0 = visible_scores(s0, b, h, i0 + ty * 4u, t0 + tx, lo, hi);
    var mx = s0;
    if (kc_n > 1u) {
      s1 = visible_scores(s1, b, h, i0 + ty * 4u, t0 + tx + TX, lo, hi);
      mx = max(mx, s1);
    }
    if (kc_n > 2u) {
      s2 = visible_scores(s2, b, h, i0 + ty * 4u, t0 + tx + 2u * TX, lo, hi);
      s3 = visible_scores(s3, b, h, i0 + ty * 4u, t0 + tx + 3u * TX, lo, hi);
      mx = max(mx, max(s2, s3));
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
    l += store_p(s0, m, b, h, i0 + ty * 4u, t0 + tx, tx, ty);
    if (kc_n > 1u) {
      l += store_p(s1, m, b, h, i0 + ty * 4u, t0 + tx + TX, tx + TX, ty);
    }
    if (kc_n > 2u) {
      l += store_p(s2, m, b, h, i0 + ty * 4u, t0 + tx + 2u * TX, tx + 2u * TX, ty);
      l += store_p(s3, m, b, h, i0 + ty * 4u, t0 + tx + 3u * TX, tx + 3u * TX, ty);
    }
    if (v_shares_k) {
      stage_kv(true, lid, kv_base, t0, n, V_OFF, d4);  // K is read: its space takes V
    }
    workgroupBarrier();

    o0 = rescale(o0, alpha);
    o1 = rescale(o1, alpha);
    for (var j = 0u; j < BK; j++) {
      let pw = sm[P_OFF + j * ROW_STRIDE + ty];
      if (in0) {
        let vv = sm[V_OFF + j * d4 + tx];
        o0 += mat4x4f(vv * pw.x, vv * pw.y, vv * pw.z, vv * pw.w);
      }
      if (in1) {
        let vv = sm[V_OFF + j * d4 + tx + TX];
        o1 += mat4x4f(vv * pw.x, vv * pw.y, vv * pw.z, vv * pw.w);
      }
    }
    workgroupBarrier();  // before the next tile overwrites K, V, P and the partials
    if (more) {
      kv_store(nk0, lid, k_off, K_STRIDE);
      kv_store(nk1, lid + nt, k_off, K_STRIDE);
      kv_store(nv0, lid, V_OFF, d4);
      kv_store(nv1, lid + nt, V_OFF, d4);
    }
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
      if (in0) {
        out[obase + tx] = o0[r] * inv;
      }
      if (in1) {
        out[obase + tx + TX] = o1[r] * inv;
      }
      if (tx == 0u) {
        lse[bh * p.seq_q + i] = select(p.neg_inf, m[r] + log(l[r]), l[r] > 0.0);
      }
    }
  }
}

// Scores s of rows i..i+3 against key j: plus the mask where j is visible
// to the row, NEG where it is not or the mask hides it.
fn visible_scores(s: vec4f, b: u32, h: u32, i: u32, j: u32, lo: vec4u, hi: vec4u) -> vec4f {
  var x = vec4f(NEG);
  for (var r = 0u; r < 4u; r++) {
    if (j >= lo[r] && j < hi[r]) {
      x[r] = s[r] + mask_at(b, h, i + r, j);
    }
  }
  return select(vec4f(NEG), x, x > vec4f(MASKED));
}

// P of rows i..i+3 against key j, the tile's key jl (exp(s - m), times the
// dropout factor), to workgroup memory; returns the undropped exponentials,
// l's share.
fn store_p(s: vec4f, m: vec4f, b: u32, h: u32, i: u32, j: u32, jl: u32, ty: u32) -> vec4f {
  let e = select(vec4f(0.0), exp(s - m), s > vec4f(MASKED));
  var z = vec4f(1.0);
  if (p.dropout != 0u) {
    for (var r = 0u; r < 4u; r++) {
      z[r] = keep_factor(b, h, i + r, j);
    }
  }
  sm[P_OFF + jl * ROW_STRIDE + ty] = e * z;
  return e;
}

// Each row's output columns times its factor.
fn rescale(o: mat4x4f, f: vec4f) -> mat4x4f {
  return mat4x4f(o[0] * f.x, o[1] * f.y, o[2] * f.z, o[3] * f.w);
}
