// Flash attention backward, pass 2 where the gradients are products: for one
// (batch, query head) and one T x T tile of (queries, keys), the scores and
// their gradient recomputed from the forward's lse,
//   S = scale Q K^T, dP = dO V^T            [T, T], in registers
//   P = exp(S + mask - lse), written as P z (z: the dropout factor)
//   dS = P (dP z - delta)
// into probs and ds [B * H, Sq, p_row] (rows padded to whole vec4s; the
// padding is written as zeros). The host then takes grad_q = scale dS K,
// grad_k = scale dS^T Q and grad_v = (P z)^T dO as tiled products. Every
// tile is independent: no loop over the other axis, no accumulators beyond
// the tile's, so the grid fills the device. Tiles that no query of theirs
// can see (above a causal diagonal) are skipped and stay unwritten; a
// visited tile writes zeros where a score is masked.
// The head dimension is staged in chunks of DC4 vec4 columns of Q, dO, K
// and V, each stored depth-major ([depth][T] floats), so that one vec4 read
// of workgroup memory gives four consecutive queries' (or keys') values at
// one depth, as the tiled matmul stages its operands: an invocation owns 4
// consecutive queries by 4 consecutive keys, each depth costs it 4 vec4
// reads for 32 fused multiply-adds, and its rows of P and dS are stored as
// vec4s. A chunk is fetched into registers before the barrier that waits
// for the previous chunk's sums (fetching it during them held more
// registers through the sums and measured slower, as did 8 queries an
// invocation and chunks of 8: see webgpu/flash_tiling.cpp). The
// invocations form a (T / 4) x (T / 4) grid: (ty, tx) owns queries 4 ty + r
// and keys 4 tx + c.
// Preceded by flash_params, philox and flash_common; the host
// (webgpu/flash_tiling.h) sizes the tiles.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;     // [B, Sq, H, D] at row stride q_row
@group(0) @binding(2) var<storage, read> k: array<vec4f>;     // [B, Sk, Hkv, D] at row stride kv_row
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<vec4f>;  // [B, Sq, H, D]
@group(0) @binding(6) var<storage, read> stats: array<f32>;   // [B, H, Sq, 2]: lse, delta
@group(0) @binding(7) var<storage, read_write> probs: array<vec4f>;  // [B * H, Sq, p_row]
@group(0) @binding(8) var<storage, read_write> ds: array<vec4f>;

override T: u32;          // tile edge: queries and keys, 32 or 64
override DC4: u32;        // vec4 columns of the head staged at a time: T / 16 (or the head's, if fewer)
override NT: u32 = T * T / 16u;
override T4: u32 = T / 4u;                   // vec4s across a staged depth
override DEPTH: u32 = 4u * DC4;              // depths a chunk
override PART: u32 = DEPTH * T4;             // vec4s of each operand's chunk

// Q, dO, K, V chunks [DEPTH][T4] vec4s each, in that order.
var<workgroup> sm: array<vec4f, 4u * PART>;

// The four operands' vec4 `e` of the chunk at column c0 (e = row + T c4:
// consecutive invocations take consecutive rows, so that their scattered
// stores fall in distinct banks); zero past the head, Sq or Sk.
struct Fetch {
  q: vec4f,
  o: vec4f,
  k: vec4f,
  v: vec4f,
}

fn fetch(b: u32, h: u32, g: u32, i0: u32, j0: u32, c0: u32, e: u32) -> Fetch {
  var f = Fetch();
  let d4 = HEAD_DIM / 4u;
  let row = e % T;
  let col = c0 + e / T;
  if (col < d4) {
    if (i0 + row < p.seq_q) {
      let t = b * p.seq_q + i0 + row;
      f.q = q[t * (p.q_row / 4u) + h * d4 + col];
      f.o = dout[t * p.heads * d4 + h * d4 + col];
    }
    if (j0 + row < p.seq_k) {
      let at = (b * p.seq_k + j0 + row) * (p.kv_row / 4u) + g * d4 + col;
      f.k = k[at];
      f.v = v[at];
    }
  }
  return f;
}

// Writes fetched vec4 `e` depth-major: its four depths' values for its row.
fn stage(e: u32, f: Fetch) {
  let row = e % T;
  let depth = 4u * (e / T);
  for (var c = 0u; c < 4u; c++) {
    let at = (depth + c) * T4 + row / 4u;
    sm[at][row % 4u] = f.q[c];
    sm[PART + at][row % 4u] = f.o[c];
    sm[2u * PART + at][row % 4u] = f.k[c];
    sm[3u * PART + at][row % 4u] = f.v[c];
  }
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let heads = p.batch * p.heads;
  let qtiles = (p.seq_q + T - 1u) / T;
  let ktiles = (p.seq_k + T - 1u) / T;
  let w = wg.y * nwg.x + wg.x;
  if (w >= heads * qtiles * ktiles) {
    return;
  }
  let bh = w % heads;
  let tile = w / heads;
  let i0 = (tile / ktiles) * T;
  let j0 = (tile % ktiles) * T;
  // Skip a tile whose last query sees none of its keys (causal) or whose
  // first query's window has left them all behind.
  let i_last = min(i0 + T, p.seq_q) - 1u;
  if (key_hi(i_last) <= j0 || key_lo(i0) >= j0 + T) {
    return;
  }
  let b = bh / p.heads;
  let h = bh % p.heads;
  let g = h / (p.heads / p.kv_heads);
  let ty = lid / T4;
  let tx = lid % T4;
  let d4 = HEAD_DIM / 4u;

  // s_r, dp_r: query 4 ty + r against keys 4 tx .. 4 tx + 3, written out
  // per r so that no array is indexed and every sum stays in a register.
  var s0 = vec4f(0.0);
  var s1 = vec4f(0.0);
  var s2 = vec4f(0.0);
  var s3 = vec4f(0.0);
  var dp0 = vec4f(0.0);
  var dp1 = vec4f(0.0);
  var dp2 = vec4f(0.0);
  var dp3 = vec4f(0.0);
  for (var c0 = 0u; c0 < d4; c0 += DC4) {
    // An invocation stages one vec4 of each operand (T * DC4 <= NT), fetched
    // before the barrier: the loads are in flight while other invocations
    // finish the previous chunk's sums.
    let staged = lid < T * DC4;
    var f = Fetch();
    if (staged) {
      f = fetch(b, h, g, i0, j0, c0, lid);
    }
    workgroupBarrier();  // the previous chunk is no longer being read
    if (staged) {
      stage(lid, f);
    }
    workgroupBarrier();
    for (var d = 0u; d < DEPTH; d++) {
      let kv = sm[2u * PART + d * T4 + tx];
      let vv = sm[3u * PART + d * T4 + tx];
      let qa = sm[d * T4 + ty];
      let oa = sm[PART + d * T4 + ty];
      s0 = fma(vec4f(qa.x), kv, s0);
      s1 = fma(vec4f(qa.y), kv, s1);
      s2 = fma(vec4f(qa.z), kv, s2);
      s3 = fma(vec4f(qa.w), kv, s3);
      dp0 = fma(vec4f(oa.x), vv, dp0);
      dp1 = fma(vec4f(oa.y), vv, dp1);
      dp2 = fma(vec4f(oa.z), vv, dp2);
      dp3 = fma(vec4f(oa.w), vv, dp3);
    }
  }
  let i = i0 + 4u * ty;
  let j = j0 + 4u * tx;
  emit(b, h, bh, i, j, s0, dp0);
  emit(b, h, bh, i + 1u, j, s1, dp1);
  emit(b, h, bh, i + 2u, j, s2, dp2);
  emit(b, h, bh, i + 3u, j, s3, dp3);
}

// P z and dS of query i against keys j .. j + 3 (j a multiple of 4), from
// the raw scores s and dP's dp; keys past Sk (the row's padding) get zeros.
fn emit(b: u32, h: u32, bh: u32, i: u32, j: u32, s: vec4f, dp: vec4f) {
  if (i >= p.seq_q || j >= p.p_row) {
    return;
  }
  let lse = stats[2u * (bh * p.seq_q + i)];
  let delta = stats[2u * (bh * p.seq_q + i) + 1u];
  let lo = key_lo(i);
  let hi = key_hi(i);
  var pz = vec4f(0.0);
  var dsv = vec4f(0.0);
  for (var c = 0u; c < 4u; c++) {
    let jc = j + c;
    if (jc >= lo && jc < hi) {
      let x = s[c] * p.scale + mask_at(b, h, i, jc);
      if (x > MASKED) {
        let pr = exp(x - lse);
        let z = keep_factor(b, h, i, jc);
        pz[c] = pr * z;
        dsv[c] = pr * (dp[c] * z - delta);
      }
    }
  }
  let at = ((bh * p.seq_q + i) * p.p_row + j) / 4u;
  probs[at] = pz;
  ds[at] = dsv;
}
