// Decode-step fusions of products of one x [m <= 4, k] with row-major
// weights W_i [n_i, k], read as vec4 (k a multiple of 4) by 32 lanes per
// output column as matvec_vec4.wgsl reads one weight, 8 columns to a
// workgroup:
//   MODE 0: out_i = x @ W_i^T for three weights (a block's q, k and v), their
//           columns numbered one after another across the three;
//   MODE 1: out0 = silu(x @ W0^T) * (x @ W1^T) (the MLP's gate and up, as
//           silu_gate.wgsl rounds it), W2 and out1/out2 unused.
// One dispatch instead of three in both modes. main_serial: the same with one
// invocation per output column and no barrier, for small k (see
// matvec.wgsl's main_serial for why). Preceded by a weights snippet (the
// weights f32, or bf16 widened as they are read) and norm_prologue.wgsl: with
// NORM, x's rows are RMS-normed as they are read (the block's input norm or
// its post-attention norm, no separate dispatch).
override MODE: u32 = 0u;

struct Params {
  m: u32,
  k: u32,
  n0: u32,
  n1: u32,
  n2: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4f>;   // [m, k / 4]
@group(0) @binding(2) var<storage, read> w0: array<WeightVec4>;  // [n0, k / 4]
@group(0) @binding(3) var<storage, read> w1: array<WeightVec4>;
@group(0) @binding(4) var<storage, read> w2: array<WeightVec4>;
@group(0) @binding(5) var<storage, read_write> o0: array<f32>;  // [m, n0]
@group(0) @binding(6) var<storage, read_write> o1: array<f32>;
@group(0) @binding(7) var<storage, read_write> o2: array<f32>;
@group(0) @binding(8) var<storage, read> norm_w: array<vec4f>;  // [k / 4] (NORM), else unused

fn norm_weight(i: u32) -> vec4f {
  return norm_w[i];
}

// RMSNorm only (NORM 0 or 1; the host takes no LayerNorm, whose bias would
// be a ninth storage binding): no bias.
fn norm_bias(i: u32) -> vec4f {
  return vec4f(0.0);
}

const WG: u32 = 256u;
const MAX_ROWS: u32 = 4u;
const LANES: u32 = 32u;
const COLS: u32 = 8u;


fn weight(which: u32, i: u32) -> vec4f {
  if (which == 0u) {
    return weight4(w0[i]);
  }
  if (which == 1u) {
    return weight4(w1[i]);
  }
  return weight4(w2[i]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let lane = lid % LANES;
  let gcol = wg.x * COLS + lid / LANES;
  let k4 = p.k / 4u;
  // Which weight the column belongs to, and its column there.
  var which = 0u;
  var col = gcol;
  var n = p.n0;
  var valid = gcol < p.n0;
  if (MODE == 0u) {
    valid = gcol < p.n0 + p.n1 + p.n2;
    if (col >= p.n0) {
      col -= p.n0;
      which = 1u;
      n = p.n1;
      if (col >= p.n1) {
        col -= p.n1;
        which = 2u;
        n = p.n2;
      }
    }
  }
  var scale: array<f32, MAX_ROWS>;
  if (NORM != 0u) {
    for (var r = 0u; r < p.m; r++) {
      var sq = 0.0;
      for (var i = lid; i < k4; i += WG) {
        let v = x[r * k4 + i];
        sq += dot(v, v);
      }
      scale[r] = norm_scale(wg_sum(sq, lid), p.k);
    }
  }
  var acc0: array<f32, MAX_ROWS>;
  var acc1: array<f32, MAX_ROWS>;
  if (valid) {
    let base = col * k4;
    for (var i = lane; i < k4; i += LANES) {
      if (MODE == 0u) {
        let b = weight(which, base + i);
        for (var r = 0u; r < MAX_ROWS; r++) {
          if (r < p.m) {
            acc0[r] += dot(normed(x[r * k4 + i], vec2f(0.0, scale[r]), i), b);
          }
        }
      } else {
        let g = weight4(w0[base + i]);
        let u = weight4(w1[base + i]);
        for (var r = 0u; r < MAX_ROWS; r++) {
          if (r < p.m) {
            let a = normed(x[r * k4 + i], vec2f(0.0, scale[r]), i);
            acc0[r] += dot(a, g);
            acc1[r] += dot(a, u);
          }
        }
      }
    }
  }
  // The 32 lanes' sums in a fixed order (run_sum4: shuffles within a
  // subgroup where the device allows, else a tree).
  let s0 = run_sum4(vec4f(acc0[0], acc0[1], acc0[2], acc0[3]), lid, LANES);
  var s1 = vec4f(0.0);
  if (MODE == 1u) {
    s1 = run_sum4(vec4f(acc1[0], acc1[1], acc1[2], acc1[3]), lid, LANES);
  }
  if (lane != 0u || !valid) {
    return;
  }
  for (var r = 0u; r < MAX_ROWS; r++) {
    if (r < p.m) {
      let v = s0[r];
      if (MODE == 1u) {
        o0[r * n + col] = v / (1.0 + exp(-v)) * s1[r];
      } else if (which == 0u) {
        o0[r * n + col] = v;
      } else if (which == 1u) {
        o1[r * n + col] = v;
      } else {
        o2[r * n + col] = v;
      }
    }
  }
}

const SERIAL_WG: u32 = 64u;

@compute @workgroup_size(SERIAL_WG)
fn main_serial(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let gcol = wg.x * SERIAL_WG + lid;
  let k4 = p.k / 4u;
  var which = 0u;
  var col = gcol;
  var n = p.n0;
  if (MODE == 0u) {
    if (gcol >= p.n0 + p.n1 + p.n2) {
      return;
    }
    if (col >= p.n0) {
      col -= p.n0;
      which = 1u;
      n = p.n1;
      if (col >= p.n1) {
        col -= p.n1;
        which = 2u;
        n = p.n2;
      }
    }
  } else if (gcol >= p.n0) {
    return;
  }
  let base = col * k4;
  for (var r = 0u; r < MAX_ROWS; r++) {
    if (r < p.m) {
      var scale = 1.0;
      if (NORM != 0u) {
        var sq = 0.0;
        for (var i = 0u; i < k4; i++) {
          let v = x[r * k4 + i];
          sq += dot(v, v);
        }
        scale = norm_scale(sq, p.k);
      }
      var a0 = 0.0;
      var a1 = 0.0;
      for (var i = 0u; i < k4; i++) {
        let a = normed(x[r * k4 + i], vec2f(0.0, scale), i);
        if (MODE == 0u) {
          a0 += dot(a, weight(which, base + i));
        } else {
          a0 += dot(a, weight4(w0[base + i]));
          a1 += dot(a, weight4(w1[base + i]));
        }
      }
      if (MODE == 1u) {
        o0[r * n + col] = a0 / (1.0 + exp(-a0)) * a1;
      } else if (which == 0u) {
        o0[r * n + col] = a0;
      } else if (which == 1u) {
        o1[r * n + col] = a0;
      } else {
        o2[r * n + col] = a0;
      }
    }
  }
}
