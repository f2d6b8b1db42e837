// Matrix-vector style matmul for few rows against a row-major B [n, k] read
// as vec4 (TRANS_B, k and every stride and offset multiples of 4): C[batch,
// m, n] = alpha * A @ B^T (+ bias) for few rows -- the decode step of every
// Linear layer, one sequence or a batch of them. Same Params as matmul.wgsl
// (preceded by matmul_params.wgsl, MAX_ROWS, 4 or 8, from the host, a
// weights snippet: B f32, or bf16 widened as it is read, and
// norm_prologue.wgsl, gelu.wgsl, matvec_fusions.wgsl). Three decode-step fusions: A's rows
// normed as they are read (NORM: RMSNorm or LayerNorm), GELU: C =
// gelu(alpha * A @ B^T + bias) (GPT-2's MLP input), and RESIDUAL: C = R +
// (alpha * A @ B^T + bias), the product that feeds a residual stream adding
// itself to it.
// Workgroup row y takes rows y * MAX_ROWS onwards, so a batch of 32
// sequences reads B four times (from cache) instead of leaving most of the
// GPU idle in a few 64x64 tiles.
// LANES lanes own an output column: they stride over its row of B in vec4s
// (512 contiguous bytes a step at 32), eight loads in flight each, and add
// their partial sums in a fixed order (run_sum4); WG / LANES columns to a
// workgroup. The host sets LANES: 32 (8 columns), or 64 (4 columns) where
// 8 would leave the grid under a wave of the GPU's cores. (matvec.wgsl,
// with 8-byte strided scalar loads and a serial sum, read the H200's memory
// at a twentieth of its bandwidth.)
const WG: u32 = 256u;
override LANES: u32 = 32u;
override COLS: u32 = WG / LANES;
const UNROLL: u32 = 8u;  // B loads in flight a lane

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<vec4f>;
@group(0) @binding(2) var<storage, read> B: array<WeightVec4>;  // f32 or bf16 (the snippet before)
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> C: array<f32>;
// Bindings 5-7 and the epilogue: matvec_fusions.wgsl.

var<private> row_stats: array<vec2f, MAX_ROWS>;  // the norm's (mean, r) of each row (NORM)

// acc[r] += A[row r, vec4 i] . b for this workgroup's rows (a_base at its first).
fn accumulate(acc: ptr<function, array<f32, MAX_ROWS>>, rows: u32, a_base: u32, i: u32, b: vec4f) {
  for (var r = 0u; r < MAX_ROWS; r++) {
    if (r < rows) {
      (*acc)[r] += dot(normed(A[a_base + r * (p.lda / 4u) + i], row_stats[r], i), b);
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let batch = wg.z;
  let lane = lid % LANES;
  let col = wg.x * COLS + lid / LANES;
  let row0 = wg.y * MAX_ROWS;
  let rows = min(p.m - row0, MAX_ROWS);
  let a_base = (p.a_offset + batch * p.a_batch_stride + row0 * p.lda) / 4u;
  let k4 = p.k / 4u;
  if (NORM != 0u) {
    for (var r = 0u; r < rows; r++) {
      var mean = 0.0;
      if (NORM == 2u) {
        var sum = 0.0;
        for (var i = lid; i < k4; i += WG) {
          let v = A[a_base + r * (p.lda / 4u) + i];
          sum += v.x + v.y + v.z + v.w;
        }
        mean = norm_mean(wg_sum(sum, lid), p.k);
      }
      var sq = 0.0;
      for (var i = lid; i < k4; i += WG) {
        let v = A[a_base + r * (p.lda / 4u) + i] - mean;
        sq += dot(v, v);
      }
      row_stats[r] = vec2f(mean, norm_scale(wg_sum(sq, lid), p.k));
    }
  }

  var acc: array<f32, MAX_ROWS>;
  if (col < p.n) {
    let b_base = (b_item(batch) + col * p.ldb) / 4u;
    // UNROLL loads in flight a lane, the tail's too (predicated): a short
    // row (k = 960: 7.5 vec4s a lane) is one round trip to memory, not one
    // per step. Each lane still adds its vec4s in rising order. The loads
    // stay as stored until they are used: widening a bf16 vec4 as it
    // arrives would wait for each load before issuing the next.
    for (var i0 = lane; i0 < k4; i0 += UNROLL * LANES) {
      var bv: array<WeightVec4, UNROLL>;
      for (var u = 0u; u < UNROLL; u++) {
        if (i0 + u * LANES < k4) {
          bv[u] = B[b_base + i0 + u * LANES];
        }
      }
      for (var u = 0u; u < UNROLL; u++) {
        if (i0 + u * LANES < k4) {
          accumulate(&acc, rows, a_base, i0 + u * LANES, weight4(bv[u]));
        }
      }
    }
  }
  // The 32 lanes' sums, four rows at a time, in a fixed order (run_sum4:
  // shuffles within a subgroup where the device allows, else a tree).
  for (var r0 = 0u; r0 < MAX_ROWS; r0 += 4u) {
    if (r0 < rows) {
      let s = run_sum4(vec4f(acc[r0], acc[r0 + 1u], acc[r0 + 2u], acc[r0 + 3u]), lid, LANES);
      if (lane == 0u && col < p.n) {
        for (var r = r0; r < min(rows, r0 + 4u); r++) {
          var v = p.alpha * s[r - r0];
          if (p.has_bias != 0u) {
            v += bias[col];
          }
          let c = c_item(batch) + (row0 + r) * p.ldc + col;
          C[c] = finish(v, c);
        }
      }
    }
  }
}

// main_serial, for small k (the host picks it): one invocation per output
// column, its row of B in vec4s, no workgroup memory and no barrier (see
// matvec.wgsl's main_serial for why).
const SERIAL_WG: u32 = 64u;

@compute @workgroup_size(SERIAL_WG)
fn main_serial(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let batch = wg.z;
  let col = wg.x * SERIAL_WG + lid;
  if (col >= p.n) {
    return;
  }
  let a_base = (p.a_offset + batch * p.a_batch_stride) / 4u;
  let b_base = (b_item(batch) + col * p.ldb) / 4u;
  let k4 = p.k / 4u;
  // Rows in blocks of MAX_ROWS, one block per workgroup row (grid y).
  for (var i = 0u; i < MAX_ROWS; i++) {
    let r = wg.y * MAX_ROWS + i;
    if (r >= p.m) {
      break;
    }
    let a_row = a_base + r * (p.lda / 4u);
    var stats = vec2f(0.0, 1.0);
    if (NORM != 0u) {
      var sum = 0.0;
      if (NORM == 2u) {
        for (var i = 0u; i < k4; i++) {
          let v = A[a_row + i];
          sum += v.x + v.y + v.z + v.w;
        }
      }
      let mean = norm_mean(sum, p.k);
      var sq = 0.0;
      for (var i = 0u; i < k4; i++) {
        let v = A[a_row + i] - mean;
        sq += dot(v, v);
      }
      stats = vec2f(mean, norm_scale(sq, p.k));
    }
    var acc = 0.0;
    for (var i = 0u; i < k4; i++) {
      acc += dot(normed(A[a_row + i], stats, i), weight4(B[b_base + i]));
    }
    var v = p.alpha * acc;
    if (p.has_bias != 0u) {
      v += bias[col];
    }
    let c = c_item(batch) + r * p.ldc + col;
    C[c] = finish(v, c);
  }
}
