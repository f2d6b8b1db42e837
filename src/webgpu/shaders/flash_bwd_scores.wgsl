// Flash attention backward, pass 2 where the gradients are products: for one
// (batch, query head) and one T x T tile of (queries, keys), the scores and
// their gradient recomputed from the forward's lse,
//   S = scale Q K^T, dP = dO V^T            [T, T], in registers
//   P = exp(S + mask - lse), written as P z (z: the dropout factor)
//   dS = P (dP z - delta)
// into probs and ds [B * H, Sq, Sk]. The host then takes grad_q = scale dS K,
// grad_k = scale dS^T Q and grad_v = (P z)^T dO as tiled products. Every tile
// is independent: no loop over the other axis, no accumulators beyond the
// tile's, so the grid fills the device. Tiles that no query of theirs can
// see (above a causal diagonal) are skipped and stay unwritten; a visited
// tile writes zeros where a score is masked. The head dimension is staged in
// chunks of DC vec4s of Q, dO, K and V. The invocations form a (T / 4) x
// (T / 4) grid: (ty, tx) owns queries ty + T/4 r and keys tx + T/4 c (r, c <
// 4). Preceded by flash_params, philox and flash_common; the host
// (webgpu/flash_tiling.h) sizes the tiles.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4f>;     // [B, Sq, H, D]
@group(0) @binding(2) var<storage, read> k: array<vec4f>;     // [B, Sk, Hkv, D]
@group(0) @binding(3) var<storage, read> v: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<vec4f>;  // [B, Sq, H, D]
@group(0) @binding(6) var<storage, read> stats: array<f32>;   // [B, H, Sq, 2]: lse, delta
@group(0) @binding(7) var<storage, read_write> probs: array<f32>;  // [B * H, Sq, Sk]
@group(0) @binding(8) var<storage, read_write> ds: array<f32>;

override T: u32;        // tile edge: queries and keys, 32 or 64
override DC: u32;       // vec4 columns of the head staged at a time
override STRIDE: u32;   // vec4s per staged row: DC made odd against bank conflicts
override SM_VEC4: u32;  // 4 * T * STRIDE
// Each 32 invocations (a warp) as 4 query rows x 8 key columns of the grid
// instead of 2 x 16: fewer distinct K and V vec4s a read of workgroup
// memory (FORGE_FLASH_SCORES_WARP=4x8, measurement; T / 4 a multiple of 8).
override WARP_4X8: bool = false;

// Q, dO, K, V chunks [T, STRIDE] each, in that order.
var<workgroup> sm: array<vec4f, SM_VEC4>;

@compute @workgroup_size(T * T / 16u)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let nt = T * T / 16u;
  let tn = T / 4u;
  let d4 = HEAD_DIM / 4u;
  let o_off = T * STRIDE;
  let k_off = 2u * T * STRIDE;
  let v_off = 3u * T * STRIDE;

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
  var ty = lid / tn;
  var tx = lid % tn;
  if (WARP_4X8) {
    let wx = tn / 8u;  // warps across a row of the grid
    let warp = lid / 32u;
    let lane = lid % 32u;
    tx = (warp % wx) * 8u + lane % 8u;
    ty = (warp / wx) * 4u + lane / 8u;
  }
  let q_stride = p.q_row / 4u;
  let o_stride = p.heads * d4;  // dO dense
  let kv_stride = p.kv_row / 4u;

  // s_r[c], dp_r[c]: query ty + tn r against key tx + tn c. Written out per
  // r, as vec4 products with a matrix of four keys' columns, so that no
  // array is indexed: the compiler keeps all 32 sums in registers.
  var s0 = vec4f(0.0);
  var s1 = vec4f(0.0);
  var s2 = vec4f(0.0);
  var s3 = vec4f(0.0);
  var dp0 = vec4f(0.0);
  var dp1 = vec4f(0.0);
  var dp2 = vec4f(0.0);
  var dp3 = vec4f(0.0);
  let row_q = ty * STRIDE;
  let row_k = tx * STRIDE;
  let step = tn * STRIDE;
  for (var c0 = 0u; c0 < d4; c0 += DC) {
    for (var e = lid; e < T * DC; e += nt) {
      let row = e / DC;
      let col = e % DC;
      var qx = vec4f(0.0);
      var ox = vec4f(0.0);
      var kx = vec4f(0.0);
      var vx = vec4f(0.0);
      if (c0 + col < d4) {
        if (i0 + row < p.seq_q) {
          let t = b * p.seq_q + i0 + row;
          qx = q[t * q_stride + h * d4 + c0 + col];
          ox = dout[t * o_stride + h * d4 + c0 + col];
        }
        if (j0 + row < p.seq_k) {
          let at = (b * p.seq_k + j0 + row) * kv_stride + g * d4 + c0 + col;
          kx = k[at];
          vx = v[at];
        }
      }
      sm[row * STRIDE + col] = qx;
      sm[o_off + row * STRIDE + col] = ox;
      sm[k_off + row * STRIDE + col] = kx;
      sm[v_off + row * STRIDE + col] = vx;
    }
    workgroupBarrier();
    for (var d = 0u; d < DC; d++) {
      // Columns: the four keys' vec4s at depth d; q * km = (dot(q, k_c))_c.
      let kq = k_off + row_k + d;
      let kv = v_off + row_k + d;
      let km = mat4x4f(sm[kq], sm[kq + step], sm[kq + 2u * step], sm[kq + 3u * step]);
      let vm = mat4x4f(sm[kv], sm[kv + step], sm[kv + 2u * step], sm[kv + 3u * step]);
      let qq = row_q + d;
      let qo = o_off + row_q + d;
      s0 += sm[qq] * km;
      s1 += sm[qq + step] * km;
      s2 += sm[qq + 2u * step] * km;
      s3 += sm[qq + 3u * step] * km;
      dp0 += sm[qo] * vm;
      dp1 += sm[qo + step] * vm;
      dp2 += sm[qo + 2u * step] * vm;
      dp3 += sm[qo + 3u * step] * vm;
    }
    workgroupBarrier();  // before the next chunk overwrites the staged rows
  }
  emit(b, h, bh, i0 + ty, j0 + tx, tn, s0, dp0);
  emit(b, h, bh, i0 + ty + tn, j0 + tx, tn, s1, dp1);
  emit(b, h, bh, i0 + ty + 2u * tn, j0 + tx, tn, s2, dp2);
  emit(b, h, bh, i0 + ty + 3u * tn, j0 + tx, tn, s3, dp3);
}

// P z and dS of query i against keys j + tn c (c < 4), from the raw scores
// s[c] and dP's dp[c].
fn emit(b: u32, h: u32, bh: u32, i: u32, j: u32, tn: u32, s: vec4f, dp: vec4f) {
  if (i >= p.seq_q) {
    return;
  }
  let lse = stats[2u * (bh * p.seq_q + i)];
  let delta = stats[2u * (bh * p.seq_q + i) + 1u];
  let lo = key_lo(i);
  let hi = key_hi(i);
  for (var c = 0u; c < 4u; c++) {
    let jc = j + tn * c;
    if (jc >= p.seq_k) {
      continue;
    }
    var pz = 0.0;
    var dsv = 0.0;
    if (jc >= lo && jc < hi) {
      let x = s[c] * p.scale + mask_at(b, h, i, jc);
      if (x > MASKED) {
        let pr = exp(x - lse);
        let z = keep_factor(b, h, i, jc);
        pz = pr * z;
        dsv = pr * (dp[c] * z - delta);
      }
    }
    let at = (bh * p.seq_q + i) * p.seq_k + jc;
    probs[at] = pz;
    ds[at] = dsv;
  }
}
