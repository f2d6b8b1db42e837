// x @ W^T for an MLX affine-quantized W [out, in] (the layout of
// affine_quant.wgsl, which precedes this file: BITS-bit values, a scale and
// bias per GROUP inputs stored as f32, bf16 or f16 per SCALE_KIND), W
// unpacked in registers. 32 lanes own an output feature (8 features to a
// workgroup) for a tile of up to 4 rows of x: they stride over the feature's
// words (128 contiguous bytes a step) and add their partial sums in a fixed
// tree. A word's PER values share one group, so its scale and bias apply once:
// sum_j (q_j s + b) x_j = s sum_j q_j x_j + b sum_j x_j.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;       // [w_rows, words]
@group(0) @binding(2) var<storage, read> scales: array<u32>;  // [w_rows, groups] as f32 or 16-bit pairs
@group(0) @binding(3) var<storage, read> biases: array<u32>;  // like scales
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [x_rows, out_stride]
@group(0) @binding(5) var<storage, read> x: array<vec4f>;     // [x_rows, cols / 4]
@group(0) @binding(6) var<storage, read> bias: array<f32>;    // [w_rows] when has_bias, else unread

const WG: u32 = 256u;
const LANES: u32 = 32u;
const FEATS: u32 = 8u;
const TM: u32 = 4u;
var<workgroup> red: array<f32, 1024>;  // [TM, WG]

// Values 4 c .. 4 c + 3 of a word.
fn unpack4(word: u32, c: u32) -> vec4f {
  let s = BITS * 4u * c;
  return vec4f(f32((word >> s) & MASK), f32((word >> (s + BITS)) & MASK), f32((word >> (s + 2u * BITS)) & MASK),
               f32((word >> (s + 3u * BITS)) & MASK));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let blocks = (p.w_rows + FEATS - 1u) / FEATS;
  let g = wg.y * nwg.x + wg.x;
  let lane = lid % LANES;
  let o = (g % blocks) * FEATS + lid / LANES;
  let m0 = (g / blocks) * TM;
  if (m0 >= p.x_rows) {
    return;
  }
  let cols4 = p.cols / 4u;
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  if (o < p.w_rows) {
    for (var wi = lane; wi < p.words; wi += LANES) {
      let word = w[o * p.words + wi];
      let i0 = wi * PER;
      let grp = o * p.groups + i0 / GROUP;
      let s = scale_at(grp);
      let b = bias_at(grp);
      for (var r = 0u; r < TM; r++) {
        if (m0 + r < p.x_rows) {
          var qx = 0.0;
          var sx = 0.0;
          for (var c = 0u; c < PER / 4u; c++) {
            let xv = x[(m0 + r) * cols4 + i0 / 4u + c];
            qx += dot(unpack4(word, c), xv);
            sx += (xv.x + xv.y) + (xv.z + xv.w);
          }
          acc[r] += s * qx + b * sx;
        }
      }
    }
  }
  for (var r = 0u; r < TM; r++) {
    red[r * WG + lid] = acc[r];
  }
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      for (var r = 0u; r < TM; r++) {
        red[r * WG + lid] += red[r * WG + lid + s];
      }
    }
    workgroupBarrier();
  }
  if (lane == 0u && o < p.w_rows) {
    for (var r = 0u; r < TM; r++) {
      if (m0 + r < p.x_rows) {
        var y = red[r * WG + lid];
        if (p.has_bias != 0u) {
          y += bias[o];
        }
        out[(m0 + r) * p.out_stride + p.out_first + o] = y;
      }
    }
  }
}

// main_serial, for CPU drivers (the host picks it): one invocation per output
// feature and up to TM rows of x, no workgroup memory and no barrier.
// SwiftShader runs each SIMD group of a workgroup that has a barrier as a
// coroutine, which made main cost hundreds of milliseconds a dispatch there
// (see matvec.wgsl's main_serial). Each word is unpacked once for the rows;
// a group's products are summed before its scale and bias apply, as above.
const SERIAL_WG: u32 = 64u;

@compute @workgroup_size(SERIAL_WG)
fn main_serial(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) lid: u32) {
  let blocks = (p.w_rows + SERIAL_WG - 1u) / SERIAL_WG;
  let g = wg.y * nwg.x + wg.x;
  let o = (g % blocks) * SERIAL_WG + lid;
  let m0 = (g / blocks) * TM;
  if (o >= p.w_rows || m0 >= p.x_rows) {
    return;
  }
  let rows = min(p.x_rows - m0, TM);
  let cols4 = p.cols / 4u;
  let words_per_group = GROUP / PER;
  var acc = vec4f(0.0);  // rows m0 .. m0 + 3
  for (var grp = 0u; grp < p.groups; grp++) {
    var qx = vec4f(0.0);
    var sx = vec4f(0.0);
    for (var wj = 0u; wj < words_per_group; wj++) {
      let wi = grp * words_per_group + wj;
      let word = w[o * p.words + wi];
      for (var c = 0u; c < PER / 4u; c++) {
        let q = unpack4(word, c);
        let i4 = wi * (PER / 4u) + c;
        for (var r = 0u; r < rows; r++) {
          let xv = x[(m0 + r) * cols4 + i4];
          qx[r] += dot(q, xv);
          sx[r] += (xv.x + xv.y) + (xv.z + xv.w);
        }
      }
    }
    let gi = o * p.groups + grp;
    acc += scale_at(gi) * qx + bias_at(gi) * sx;
  }
  for (var r = 0u; r < rows; r++) {
    var y = acc[r];
    if (p.has_bias != 0u) {
      y += bias[o];
    }
    out[(m0 + r) * p.out_stride + p.out_first + o] = y;
  }
}
