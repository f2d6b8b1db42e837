// Matrix-vector style matmul for few rows (decode steps): C[batch, m, n] =
// alpha * A @ op(B) (+ bias) for few rows and A not transposed, MAX_ROWS
// rows (4 or 8, prepended by the host) to a workgroup row (wg.y), as in
// matvec_vec4.wgsl. Same Params as matmul.wgsl (preceded by
// matmul_params.wgsl). Each workgroup owns a block of
// output columns, 8 columns x 32 lanes: the k sum is split across lanes, so
// each thread's serial loop is short (latency, not bandwidth, bounds these
// small products) and there are n / 8 workgroups to fill the device. B, the
// large operand, is read once:
//   B stored [k, n]: adjacent threads read adjacent columns (32-byte runs);
//   B stored [n, k] (TRANS_B): adjacent threads read adjacent k.
// The decode-step fusions of matvec_vec4.wgsl (A's rows normed as they are
// read, GELU, RESIDUAL) for the B it does not take (GPT-2's Conv1D weights
// [k, n]): preceded by norm_prologue.wgsl, gelu.wgsl, matvec_fusions.wgsl
// and main_kn's load and store (matvec_kn_load.wgsl or matvec_kn_load4.wgsl;
// matvec_kn_store.wgsl or matvec_kn_append.wgsl), k a multiple of 4 under
// NORM.
override TRANS_B: bool = false;

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> C: array<f32>;

var<workgroup> partial: array<f32, MAX_ROWS * WG>;

// The norm's (mean, r) of the row of k values at A[base ..], summed by the
// whole workgroup (uniform control flow).
fn row_stats_wg(base: u32, lid: u32) -> vec2f {
  var mean = 0.0;
  if (NORM == 2u) {
    var sum = 0.0;
    for (var j = lid; j < p.k; j += WG) {
      sum += A[base + j];
    }
    mean = norm_mean(wg_sum(sum, lid), p.k);
  }
  var sq = 0.0;
  for (var j = lid; j < p.k; j += WG) {
    let d = A[base + j] - mean;
    sq += d * d;
  }
  return vec2f(mean, norm_scale(wg_sum(sq, lid), p.k));
}

// The statistics of a workgroup's rows (NORM), each summed by the whole
// workgroup (uniform control flow).
fn block_stats(a_base: u32, rows: u32, lid: u32) -> array<vec2f, MAX_ROWS> {
  var stats: array<vec2f, MAX_ROWS>;
  if (NORM != 0u) {
    for (var r = 0u; r < rows; r++) {
      stats[r] = row_stats_wg(a_base + r * p.lda, lid);
    }
  }
  return stats;
}

// The same by one invocation.
fn row_stats_serial(base: u32) -> vec2f {
  var mean = 0.0;
  if (NORM == 2u) {
    var sum = 0.0;
    for (var j = 0u; j < p.k; j++) {
      sum += A[base + j];
    }
    mean = norm_mean(sum, p.k);
  }
  var sq = 0.0;
  for (var j = 0u; j < p.k; j++) {
    let d = A[base + j] - mean;
    sq += d * d;
  }
  return vec2f(mean, norm_scale(sq, p.k));
}

const COLS: u32 = 8u;
const LANES: u32 = 32u;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let batch = wg.z;
  var c: u32;
  var lane: u32;
  if (TRANS_B) {
    lane = lid % LANES;
    c = lid / LANES;
  } else {
    c = lid % COLS;
    lane = lid / COLS;
  }
  let col = wg.x * COLS + c;
  let row0 = wg.y * MAX_ROWS;
  let rows = min(p.m - row0, MAX_ROWS);
  let a_base = p.a_offset + batch * p.a_batch_stride + row0 * p.lda;
  let b_base = b_item(batch);
  var stats = block_stats(a_base, rows, lid);

  var acc: array<f32, MAX_ROWS>;
  if (col < p.n) {
    for (var kk = lane; kk < p.k; kk += LANES) {
      var b: f32;
      if (TRANS_B) {
        b = B[b_base + col * p.ldb + kk];
      } else {
        b = B[b_base + kk * p.ldb + col];
      }
      for (var r = 0u; r < MAX_ROWS; r++) {
        if (r < rows) {
          acc[r] = fma(normed1(A[a_base + r * p.lda + kk], stats[r], kk), b, acc[r]);
        }
      }
    }
  }
  for (var r = 0u; r < rows; r++) {
    partial[r * WG + lid] = acc[r];
  }
  workgroupBarrier();
  // Lane 0 of each column adds its lanes in a fixed order.
  if (lane == 0u && col < p.n) {
    for (var r = 0u; r < rows; r++) {
      var s = 0.0;
      for (var l = 0u; l < LANES; l++) {
        var idx: u32;
        if (TRANS_B) {
          idx = c * LANES + l;
        } else {
          idx = l * COLS + c;
        }
        s += partial[r * WG + idx];
      }
      var v = p.alpha * s;
      if (p.has_bias != 0u) {
        v += bias[col];
      }
      let ci = c_item(batch) + (row0 + r) * p.ldc + col;
      C[ci] = finish(v, ci);
    }
  }
}

// main_serial, for small k (the host picks it): one invocation per output
// column sums its k products in order, with no workgroup memory and no
// barrier. 32 lanes a column would mostly idle on so short a row, and a CPU
// driver (SwiftShader) runs a workgroup that has a barrier as one coroutine
// per SIMD group, which made each of these small products cost milliseconds.
const SERIAL_WG: u32 = 64u;

@compute @workgroup_size(SERIAL_WG)
fn main_serial(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let batch = wg.z;
  let col = wg.x * SERIAL_WG + lid;
  if (col >= p.n) {
    return;
  }
  let a_base = p.a_offset + batch * p.a_batch_stride;
  let b_base = b_item(batch);
  // Rows outside, k inside: no per-invocation array (which a CPU driver
  // keeps in memory); B is read m <= 4 times.
  // Rows in blocks of MAX_ROWS, one block per workgroup row (grid y).
  for (var i = 0u; i < MAX_ROWS; i++) {
    let r = wg.y * MAX_ROWS + i;
    if (r >= p.m) {
      break;
    }
    var stats = vec2f(0.0, 1.0);
    if (NORM != 0u) {
      stats = row_stats_serial(a_base + r * p.lda);
    }
    var acc = 0.0;
    for (var kk = 0u; kk < p.k; kk++) {
      var b: f32;
      if (TRANS_B) {
        b = B[b_base + col * p.ldb + kk];
      } else {
        b = B[b_base + kk * p.ldb + col];
      }
      acc = fma(normed1(A[a_base + r * p.lda + kk], stats, kk), b, acc);
    }
    var v = p.alpha * acc;
    if (p.has_bias != 0u) {
      v += bias[col];
    }
    let ci = c_item(batch) + r * p.ldc + col;
    C[ci] = finish(v, ci);
  }
}

// main_kn, for B stored [k, n] with n a multiple of 4 and at most 4 rows
// (the host picks it; GPT-2's Conv1D weights in a decode step): invocation
// lid owns 4 adjacent output columns (column group lid % KN_CG) over k-slice
// lid / KN_CG, each keeping KN_UNROLL rows' loads in flight; the slices' sums
// are added in a fixed order (strided_sum4). 8 columns a workgroup (KN_CG
// 2) or 4 (KN_CG 1, the host's choice where 8 leave the grid under a wave,
// as GPT-2's c_proj and second MLP product: 96 workgroups): on an H100,
// GPT-2 124M decoded at 1,407-1,424 tokens/s so, 1,366-1,370 with 8
// columns everywhere, 1,327-1,335 with 4 everywhere (three calls each, one
// command). Earlier, when one invocation added the slices serially, 8
// columns had been best on the H200: 745 / 970 / 1,050 / 868 tokens/s with
// 32 / 16 / 8 / 4.
override KN_CG: u32 = 2u;
override KN_KS: u32 = WG / KN_CG;
const KN_UNROLL: u32 = 4u;

@compute @workgroup_size(256)
fn main_kn(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let batch = wg.z;
  let cg = lid % KN_CG;
  let ks = lid / KN_CG;
  let col = (wg.x * KN_CG + cg) * 4u;
  let row0 = wg.y * MAX_ROWS;
  let rows = min(p.m - row0, MAX_ROWS);
  let a_base = p.a_offset + batch * p.a_batch_stride + row0 * p.lda;
  let b_base = b_item(batch);
  var stats = block_stats(a_base, rows, lid);

  var acc: array<vec4f, MAX_ROWS>;
  if (col < p.n) {
    for (var k0 = ks; k0 < p.k; k0 += KN_UNROLL * KN_KS) {
      var bv: array<vec4f, KN_UNROLL>;
      for (var u = 0u; u < KN_UNROLL; u++) {
        let kk = k0 + u * KN_KS;
        if (kk < p.k) {
          bv[u] = kn_load(b_base + kk * p.ldb + col);
        }
      }
      for (var u = 0u; u < KN_UNROLL; u++) {
        let kk = k0 + u * KN_KS;
        if (kk < p.k) {
          for (var r = 0u; r < MAX_ROWS; r++) {
            if (r < rows) {
              acc[r] = fma(vec4f(normed1(A[a_base + r * p.lda + kk], stats[r], kk)), bv[u], acc[r]);
            }
          }
        }
      }
    }
  }
  for (var r = 0u; r < rows; r++) {
    // The slices' sums in a fixed order: by subgroup where the device
    // allows (reduce_subgroup.wgsl), else the first 16 slices each add 8,
    // then a tree adds those (five barriers instead of 128 serial adds by
    // one invocation: GPT-2 124M decode 1,180-1,189 -> 1,202-1,203
    // tokens/s on the H200).
    let s = strided_sum4(acc[r], lid, KN_CG);
    if (ks == 0u && col < p.n) {
      let ci = c_item(batch) + (row0 + r) * p.ldc + col;
      for (var e = 0u; e < 4u; e++) {
        var v = p.alpha * s[e];
        if (p.has_bias != 0u) {
          v += bias[col + e];
        }
        kn_store(ci + e, col + e, v);
      }
    }
  }
}
