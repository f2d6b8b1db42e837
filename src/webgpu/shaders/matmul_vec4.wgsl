// Tiled matmul over vec4 loads: C[batch, m, n] = alpha * op(A) @ op(B)
// (+ bias[n]) when each operand's contiguous dim, row stride, batch stride
// and offset are multiples of 4 (the host checks; matmul.wgsl takes the
// rest); A alone may be unaligned (matmul_a_scalar.wgsl: the LM head's
// logit gradient, whose row stride is the vocabulary). A workgroup of WGD x
// WGD threads (16, or 8 for 64x64 tiles of 8x8 outputs) computes a
// (WGD T)x(WGD TN) tile of C. Each thread owns (T/4)x(TN/4) blocks of 4x4
// outputs, block (i, j) at rows 4 * (lid.y + WGD i) and columns
// 4 * (lid.x + WGD j): one vec4 read of
// workgroup memory feeds four FMAs, and adjacent threads read adjacent
// vec4s. k advances in slices of BK; the next slice is fetched from global
// memory into registers while the current one is multiplied. The kernel is
// bound by its registers: at 128 a thread or fewer a core holds two
// workgroups, so bounds are clamped rather than branched on where that is
// exact (see load_b) and k is checked only where needed.
// tile_sums and store_tile are also the body of matmul_pieces.wgsl's entry
// point (appended after this file), which sums a grid's last wave in pieces.
// Preceded by matmul_params.wgsl, matmul_triangle.wgsl (an A read as a
// triangle sums only its part of k), one of matmul_a_vec4.wgsl /
// matmul_a_scalar.wgsl (the binding of A and its loader), gelu.wgsl,
// matmul_epilogue.wgsl and one
// of weights_f32.wgsl / weights_bf16.wgsl (B's values: a bf16 B is widened
// as it is staged, so workgroup memory and the sums stay f32).
override TRANS_A: bool = false;  // A stored [k, m] (row stride lda)
override TRANS_B: bool = false;  // B stored [n, k] (row stride ldb)
override T: u32 = 8u;            // outputs per thread along the rows: 4 or 8
override TN: u32 = T;            // and along the columns: 4 or 8
override BK: u32 = 16u;          // depth of a k slice: 8 or 16
override K_WHOLE: bool = false;  // k is a multiple of BK: no slice runs past it
// Epilogues (one batch item, C dense [m, n]), in this order: C =
// gelu(alpha * op(A) @ op(B) + bias) (GPT-2's MLP input), C = R + that (a
// product that feeds a residual stream), as the separate ops would round.
override GELU: bool = false;
override RESIDUAL: bool = false;
// C += that instead of C = it (a gradient summed into its slot).
override ACCUMULATE: bool = false;
// Tiles in groups of GROUP_ROWS rows of tiles, column by column within a
// group (0 or 1: row by row). Workgroups start in the order of their linear
// id, x fastest: row by row, a wave of them spans a few rows of tiles and
// every column, so the whole of B passes through the cache each wave; in
// groups, a wave spans GROUP_ROWS rows and wave / GROUP_ROWS columns.
override GROUP_ROWS: u32 = 0u;
// Threads along each side of the workgroup (WGD x WGD): 16, or 8 for 64x64
// tiles of 8x8 outputs a thread (the host's FORGE_MATMUL_THREADS switch).
override WGD: u32 = 16u;
override NT: u32 = WGD * WGD;

const MAX_T4: u32 = 2u;           // TM4 and TN4 at most
const MAX_LOADS: u32 = 2u;        // LOADS_A and LOADS_B at most
override TM4: u32 = T / 4u;
override TN4: u32 = TN / 4u;
override BM4: u32 = WGD * T / 4u;   // vec4s across a tile's rows (BM / 4)
override BN4: u32 = WGD * TN / 4u;  // and across its columns (BN / 4)
override TILE4_A: u32 = BK * BM4;  // vec4s of each operand's slice
override TILE4_B: u32 = BK * BN4;
override LOADS_A: u32 = (TILE4_A + NT - 1u) / NT;  // vec4s of each operand a thread stages per slice
override LOADS_B: u32 = (TILE4_B + NT - 1u) / NT;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> B: array<WeightVec4>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> C: array<f32>;
@group(0) @binding(5) var<storage, read> R: array<f32>;  // C's shape (RESIDUAL), else unused

var<workgroup> As: array<vec4<f32>, TILE4_A>;  // [BK][BM / 4]: column kk of the A tile
var<workgroup> Bs: array<vec4<f32>, TILE4_B>;  // [BK][BN / 4]: row kk of the B tile

// Logical B[row, col .. col + 3] (stored [k, n]) or B[row .. row + 3, col]
// (TRANS_B, stored [n, k]) as stored (weight4 widens it); zero past k. A
// column past n reads the last one instead: it only feeds outputs past n,
// which are not stored.
fn load_b(base: u32, row: u32, col: u32) -> WeightVec4 {
  if (!K_WHOLE && row >= p.k) {
    return WeightVec4();
  }
  if (TRANS_B) {
    return B[(base + min(col, p.n - 1u) * p.ldb + row) / 4u];
  }
  return B[(base + row * p.ldb + min(col, p.n - 4u)) / 4u];
}

// Staged vec4 `idx` of A's slice at depth t: four rows at one k (TRANS_A,
// already across the tile as workgroup memory holds it) or four k of a row.
fn fetch_a(base: u32, row0: u32, t: u32, idx: u32) -> vec4<f32> {
  if (TRANS_A) {
    let row = row0 + 4u * (idx % BM4);
    let col = t + idx / BM4;
    return tri_mask4(load_a(base, row, col), row, col, true);
  }
  let row = row0 + idx / (BK / 4u);
  let col = t + 4u * (idx % (BK / 4u));
  return tri_mask4(load_a(base, row, col), row, col, false);
}
fn fetch_b(base: u32, col0: u32, t: u32, idx: u32) -> WeightVec4 {
  if (TRANS_B) {
    return load_b(base, t + 4u * (idx % (BK / 4u)), col0 + idx / (BK / 4u));
  }
  return load_b(base, t + idx / BN4, col0 + 4u * (idx % BN4));
}

// Writes staged vec4 `idx` into A's tile or B's ([BK][BM4] / [BK][BN4]
// vec4s): as it is where it already runs across the tile (`across`), else
// scattered to four k rows.
fn stage(into_b: bool, across: bool, idx: u32, v: vec4<f32>) {
  if (across) {
    if (into_b) {
      Bs[idx] = v;
    } else {
      As[idx] = v;
    }
    return;
  }
  let r = idx / (BK / 4u);  // the row (of A) or column (of B) in the tile
  let kk = 4u * (idx % (BK / 4u));
  for (var e = 0u; e < 4u; e++) {
    if (into_b) {
      Bs[(kk + e) * BN4 + r / 4u][r % 4u] = v[e];
    } else {
      As[(kk + e) * BM4 + r / 4u][r % 4u] = v[e];
    }
  }
}

// Adds op(A) @ op(B) over k in [k_begin, k_end) to `acc`, for the tile of
// batch item `batch` at (row0, col0): slices of BK from k_begin (a k-range
// of a stream-K share starts at a multiple of BK), the next fetched from
// global memory into registers while the current one is multiplied. Called
// in uniform control flow (it holds the workgroup's barriers).
fn tile_sums(batch: u32, row0: u32, col0: u32, k_begin: u32, k_end: u32, tid: u32, lid: vec3u,
             acc: ptr<function, array<vec4<f32>, 16>>) {
  let a_base = p.a_offset + batch * p.a_batch_stride;
  let b_base = b_item(batch);

  // Slice [t, t + BK) of the tiles, LOADS_A / LOADS_B vec4s of each per
  // thread (the last round partial where a slice has fewer than 256 x LOADS
  // vec4s).
  // B stays as stored until it is staged: widening a bf16 B as it arrives
  // would wait for the fetch before the current slice's sums.
  var ra: array<vec4<f32>, MAX_LOADS>;
  var rb: array<WeightVec4, MAX_LOADS>;
  // Only where a tile may sum nothing (an upper triangle's rows past k, a
  // tile outside C's): the check costs registers even where it holds.
  if ((TRI != 2u && TRI_C == 0u) || k_begin < k_end) {
    for (var l = 0u; l < LOADS_A; l++) {
      let idx = tid + NT * l;
      if (idx < TILE4_A) {
        ra[l] = fetch_a(a_base, row0, k_begin, idx);
      }
    }
    for (var l = 0u; l < LOADS_B; l++) {
      let idx = tid + NT * l;
      if (idx < TILE4_B) {
        rb[l] = fetch_b(b_base, col0, k_begin, idx);
      }
    }
  }

  for (var t = k_begin; t < k_end; t += BK) {
    workgroupBarrier();  // the previous slice is no longer being read
    for (var l = 0u; l < LOADS_A; l++) {
      let idx = tid + NT * l;
      if (idx < TILE4_A) {
        stage(false, TRANS_A, idx, ra[l]);
      }
    }
    for (var l = 0u; l < LOADS_B; l++) {
      let idx = tid + NT * l;
      if (idx < TILE4_B) {
        stage(true, !TRANS_B, idx, weight4(rb[l]));
      }
    }
    workgroupBarrier();
    // Fetch the next slice while this one is multiplied.
    let tn = t + BK;
    if (tn < k_end) {
      for (var l = 0u; l < LOADS_A; l++) {
        let idx = tid + NT * l;
        if (idx < TILE4_A) {
          ra[l] = fetch_a(a_base, row0, tn, idx);
        }
      }
      for (var l = 0u; l < LOADS_B; l++) {
        let idx = tid + NT * l;
        if (idx < TILE4_B) {
          rb[l] = fetch_b(b_base, col0, tn, idx);
        }
      }
    }
    for (var kk = 0u; kk < BK; kk++) {
      var av: array<vec4<f32>, MAX_T4>;
      var bv: array<vec4<f32>, MAX_T4>;
      for (var i = 0u; i < TM4; i++) {
        av[i] = As[kk * BM4 + lid.y + WGD * i];
      }
      for (var j = 0u; j < TN4; j++) {
        bv[j] = Bs[kk * BN4 + lid.x + WGD * j];
      }
      for (var i = 0u; i < TM4; i++) {
        for (var r = 0u; r < 4u; r++) {
          for (var j = 0u; j < TN4; j++) {
            let s = (4u * i + r) * MAX_T4 + j;
            (*acc)[s] = fma(vec4<f32>(av[i][r]), bv[j], (*acc)[s]);
          }
        }
      }
    }
  }
}

// Stores the tile's sums into C with the epilogues: alpha, the bias, GELU,
// the residual, and C's triangle (store_c: added where ACCUMULATE).
fn store_tile(batch: u32, row0: u32, col0: u32, lid: vec3u, acc: ptr<function, array<vec4<f32>, 16>>) {
  let c_base = c_item(batch);
  for (var i = 0u; i < TM4; i++) {
    for (var r = 0u; r < 4u; r++) {
      let row = row0 + 4u * (lid.y + WGD * i) + r;
      if (row >= p.m) {
        continue;
      }
      for (var j = 0u; j < TN4; j++) {
        let col = col0 + 4u * (lid.x + WGD * j);
        let v = (*acc)[(4u * i + r) * MAX_T4 + j];
        for (var e = 0u; e < 4u; e++) {
          if (col + e < p.n) {
            var o = epilogue(p.alpha * v[e], row, col + e);
            if (!in_triangle(TRI_C, row, col + e)) {
              o = 0.0;
            }
            store_c(c_base + row * p.ldc + col + e, o);
          }
        }
      }
    }
  }
}

// The (column, row) of the tile workgroup `wg` of a grid of `n` computes:
// `wg` itself, or its place in the order by groups of GROUP_ROWS rows (the
// last group may have fewer).
fn tile_of(wg: vec2u, n: vec2u) -> vec2u {
  if (GROUP_ROWS <= 1u) {
    return wg;
  }
  let id = wg.y * n.x + wg.x;
  let first = id / (GROUP_ROWS * n.x) * GROUP_ROWS;
  let rows = min(n.y - first, GROUP_ROWS);
  let in_group = id - first * n.x;
  return vec2u(in_group / rows, first + in_group % rows);
}

@compute @workgroup_size(WGD, WGD)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let tile = tile_of(wg.xy, nwg.xy);
  let row0 = tile.y * WGD * T;
  let col0 = tile.x * WGD * TN;
  // The k this tile sums: all of it, its rows' part of a triangular A, or
  // none for a tile outside C's triangle.
  let k_begin = tri_k_begin(row0);
  let k_end = select(tri_k_end(row0, WGD * T), k_begin, tri_c_skips(row0, col0, WGD * T, WGD * TN));
  var acc: array<vec4<f32>, 16>;  // [4 * i + r][j]: row 4 (lid.y + WGD i) + r, columns of block j
  tile_sums(wg.z, row0, col0, k_begin, k_end, lid.y * WGD + lid.x, lid, &acc);
  store_tile(wg.z, row0, col0, lid, &acc);
}
