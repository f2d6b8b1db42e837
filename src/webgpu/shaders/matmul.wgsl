// Tiled matmul: C[batch, m, n] = alpha * op(A) @ op(B) (+ bias[n]).
// A workgroup of 16x16 threads computes a (16T)x(16T) tile of C, each thread
// TxT outputs strided by 16 (coalesced stores, conflict-free shared reads),
// stepping through k in slices of BK staged in workgroup memory. T = 4 (64x64
// tiles, more workgroups for mid-sized products) or 8 (128x128 tiles, more
// reuse for large ones); every thread stages 4 values of A and 4 of B a slice.
// Any layout and alignment; matmul_vec4.wgsl is the faster path for aligned
// operands. Preceded by matmul_params.wgsl and matmul_triangle.wgsl.
override TRANS_A: bool = false;  // A stored [k, m] (row stride lda)
override TRANS_B: bool = false;  // B stored [n, k] (row stride ldb)
override T: u32 = 4u;            // outputs per thread along each dim: 4 or 8

const MAX_T: u32 = 8u;
override BM: u32 = 16u * T;
override BN: u32 = 16u * T;
override BK: u32 = 64u / T;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> C: array<f32>;

var<workgroup> As: array<f32, 1024>;  // [BK][BM], BK * BM = 1024
var<workgroup> Bs: array<f32, 1024>;  // [BK][BN]

// Logical A[row, col] (row < m, col < k, on the side of the diagonal TRI
// reads), zero outside.
fn load_a(base: u32, row: u32, col: u32) -> f32 {
  if (row >= p.m || col >= p.k || !tri_keeps(row, col)) {
    return 0.0;
  }
  if (TRANS_A) {
    return A[base + col * p.lda + row];
  }
  return A[base + row * p.lda + col];
}

// Logical B[row, col] (row < k, col < n), zero outside.
fn load_b(base: u32, row: u32, col: u32) -> f32 {
  if (row >= p.k || col >= p.n) {
    return 0.0;
  }
  if (TRANS_B) {
    return B[base + col * p.ldb + row];
  }
  return B[base + row * p.ldb + col];
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let batch = wg.z;
  let row0 = wg.y * BM;
  let col0 = wg.x * BN;
  let tid = lid.y * 16u + lid.x;
  let a_base = p.a_offset + batch * p.a_batch_stride;
  let b_base = b_item(batch);

  var acc: array<f32, 64>;  // [T][T] used; T is a pipeline constant, so the rest folds away
  let k_end = select(tri_k_end(row0, BM), 0u, tri_c_skips(row0, col0, BM, BM));
  for (var t = tri_k_begin(row0); t < k_end; t += BK) {
    // Stage a 64x16 slice of A and a 16x64 slice of B, 4 values per thread,
    // consecutive threads walking the stored layout's contiguous dim.
    for (var i = 0u; i < 4u; i++) {
      let idx = tid + i * 256u;
      var mm: u32;
      var kk: u32;
      if (TRANS_A) {
        mm = idx % BM;
        kk = idx / BM;
      } else {
        kk = idx % BK;
        mm = idx / BK;
      }
      As[kk * BM + mm] = load_a(a_base, row0 + mm, t + kk);
      var nn: u32;
      var kb: u32;
      if (TRANS_B) {
        kb = idx % BK;
        nn = idx / BK;
      } else {
        nn = idx % BN;
        kb = idx / BN;
      }
      Bs[kb * BN + nn] = load_b(b_base, t + kb, col0 + nn);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var av: array<f32, MAX_T>;
      var bv: array<f32, MAX_T>;
      for (var i = 0u; i < T; i++) {
        av[i] = As[kk * BM + lid.y + 16u * i];
        bv[i] = Bs[kk * BN + lid.x + 16u * i];
      }
      for (var i = 0u; i < T; i++) {
        for (var j = 0u; j < T; j++) {
          acc[i * T + j] = fma(av[i], bv[j], acc[i * T + j]);
        }
      }
    }
    workgroupBarrier();
  }

  let c_base = c_item(batch);
  for (var i = 0u; i < T; i++) {
    let row = row0 + lid.y + 16u * i;
    if (row >= p.m) {
      continue;
    }
    for (var j = 0u; j < T; j++) {
      let col = col0 + lid.x + 16u * j;
      if (col < p.n) {
        var v = p.alpha * acc[i * T + j];
        if (p.has_bias != 0u) {
          v += bias[col];
        }
        if (!in_triangle(TRI_C, row, col)) {
          v = 0.0;
        }
        C[c_base + row * p.ldc + col] = v;
      }
    }
  }
}
