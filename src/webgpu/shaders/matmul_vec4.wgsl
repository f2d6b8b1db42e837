// Tiled matmul over vec4 loads: C[batch, m, n] = alpha * op(A) @ op(B)
// (+ bias[n]) when each operand's contiguous dim, row stride, batch stride
// and offset are multiples of 4 (the host checks; matmul.wgsl takes the
// rest); A alone may be unaligned (matmul_a_scalar.wgsl: the LM head's
// logit gradient, whose row stride is the vocabulary). A workgroup of 16x16
// threads computes a (16T)x(16T) tile of C. Each thread owns (T/4)x(T/4)
// blocks of 4x4 outputs, block (i, j) at rows 4 * (lid.y + 16 i) and columns
// 4 * (lid.x + 16 j): one vec4 read of workgroup memory feeds four FMAs, and
// adjacent threads read adjacent vec4s. k advances in slices of BK; the next
// slice is fetched from global memory into registers while the current one is
// multiplied.
// Preceded by matmul_params.wgsl and one of matmul_a_vec4.wgsl /
// matmul_a_scalar.wgsl (the binding of A and its loader).
override TRANS_A: bool = false;  // A stored [k, m] (row stride lda)
override TRANS_B: bool = false;  // B stored [n, k] (row stride ldb)
override T: u32 = 8u;            // outputs per thread along each dim: 4 or 8

const BK: u32 = 16u;
const MAX_T4: u32 = 2u;           // T / 4 at most
override BM4: u32 = 4u * T;       // vec4s across a tile's rows (BM / 4); BN = BM
override LOADS: u32 = T / 4u;     // vec4s of each operand a thread stages per slice

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> B: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> C: array<f32>;

var<workgroup> As: array<vec4<f32>, 512>;  // [BK][BM / 4]: column kk of the A tile
var<workgroup> Bs: array<vec4<f32>, 512>;  // [BK][BN / 4]: row kk of the B tile

// Logical B[row, col .. col + 3] (stored [k, n]) or B[row .. row + 3, col]
// (TRANS_B, stored [n, k]); zero outside.
fn load_b(base: u32, row: u32, col: u32) -> vec4<f32> {
  if (row >= p.k || col >= p.n) {
    return vec4<f32>(0.0);
  }
  if (TRANS_B) {
    return B[(base + col * p.ldb + row) / 4u];
  }
  return B[(base + row * p.ldb + col) / 4u];
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let batch = wg.z;
  let row0 = wg.y * 16u * T;
  let col0 = wg.x * 16u * T;
  let tid = lid.y * 16u + lid.x;
  let a_base = p.a_offset + batch * p.a_batch_stride;
  let b_base = batch * p.b_batch_stride;

  // Slice [t, t + BK) of the tiles, LOADS vec4s of each per thread. Along k
  // the slice is 4 vec4s wide; across m (or n) it is BM4 vec4s wide.
  var ra: array<vec4<f32>, MAX_T4>;
  var rb: array<vec4<f32>, MAX_T4>;
  for (var l = 0u; l < LOADS; l++) {
    let idx = tid + 256u * l;
    if (TRANS_A) {
      ra[l] = load_a(a_base, row0 + 4u * (idx % BM4), idx / BM4);
    } else {
      ra[l] = load_a(a_base, row0 + idx / 4u, 4u * (idx % 4u));
    }
    if (TRANS_B) {
      rb[l] = load_b(b_base, 4u * (idx % 4u), col0 + idx / 4u);
    } else {
      rb[l] = load_b(b_base, idx / BM4, col0 + 4u * (idx % BM4));
    }
  }

  var acc: array<vec4<f32>, 16>;  // [4 * i + r][j]: row 4 (lid.y + 16 i) + r, columns of block j
  for (var t = 0u; t < p.k; t += BK) {
    workgroupBarrier();  // the previous slice is no longer being read
    for (var l = 0u; l < LOADS; l++) {
      let idx = tid + 256u * l;
      if (TRANS_A) {
        As[idx] = ra[l];  // already [kk][m4]
      } else {
        let r = idx / 4u;
        let kk = 4u * (idx % 4u);
        for (var e = 0u; e < 4u; e++) {
          As[(kk + e) * BM4 + r / 4u][r % 4u] = ra[l][e];
        }
      }
      if (TRANS_B) {
        let c = idx / 4u;
        let kk = 4u * (idx % 4u);
        for (var e = 0u; e < 4u; e++) {
          Bs[(kk + e) * BM4 + c / 4u][c % 4u] = rb[l][e];
        }
      } else {
        Bs[idx] = rb[l];
      }
    }
    workgroupBarrier();
    // Fetch the next slice while this one is multiplied.
    let tn = t + BK;
    if (tn < p.k) {
      for (var l = 0u; l < LOADS; l++) {
        let idx = tid + 256u * l;
        if (TRANS_A) {
          ra[l] = load_a(a_base, row0 + 4u * (idx % BM4), tn + idx / BM4);
        } else {
          ra[l] = load_a(a_base, row0 + idx / 4u, tn + 4u * (idx % 4u));
        }
        if (TRANS_B) {
          rb[l] = load_b(b_base, tn + 4u * (idx % 4u), col0 + idx / 4u);
        } else {
          rb[l] = load_b(b_base, tn + idx / BM4, col0 + 4u * (idx % BM4));
        }
      }
    }
    for (var kk = 0u; kk < BK; kk++) {
      var av: array<vec4<f32>, MAX_T4>;
      var bv: array<vec4<f32>, MAX_T4>;
      for (var i = 0u; i < LOADS; i++) {
        av[i] = As[kk * BM4 + lid.y + 16u * i];
        bv[i] = Bs[kk * BM4 + lid.x + 16u * i];
      }
      for (var i = 0u; i < LOADS; i++) {
        for (var r = 0u; r < 4u; r++) {
          for (var j = 0u; j < LOADS; j++) {
            let s = (4u * i + r) * MAX_T4 + j;
            acc[s] = fma(vec4<f32>(av[i][r]), bv[j], acc[s]);
          }
        }
      }
    }
  }

  let c_base = p.c_offset + batch * p.m * p.ldc;
  for (var i = 0u; i < LOADS; i++) {
    for (var r = 0u; r < 4u; r++) {
      let row = row0 + 4u * (lid.y + 16u * i) + r;
      if (row >= p.m) {
        continue;
      }
      for (var j = 0u; j < LOADS; j++) {
        let col = col0 + 4u * (lid.x + 16u * j);
        let v = acc[(4u * i + r) * MAX_T4 + j];
        for (var e = 0u; e < 4u; e++) {
          if (col + e < p.n) {
            var o = p.alpha * v[e];
            if (p.has_bias != 0u) {
              o += bias[col + e];
            }
            C[c_base + row * p.ldc + col + e] = o;
          }
        }
      }
    }
  }
}
