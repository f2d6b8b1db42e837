// x @ W^T for an MLX affine-quantized W [out, in] (the layout of
// affine_quant.wgsl, which precedes this file: BITS-bit values, a scale and
// bias per GROUP inputs stored as f32, bf16 or f16 per SCALE_KIND), W
// unpacked in registers: one workgroup per (output feature, tile of 4 rows of
// x), its 64 invocations striding over the words of the weight row, the
// partial sums reduced in workgroup memory.
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;       // [w_rows, words]
@group(0) @binding(2) var<storage, read> scales: array<u32>;  // [w_rows, groups] as f32 or 16-bit pairs
@group(0) @binding(3) var<storage, read> biases: array<u32>;  // like scales
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [x_rows, out_stride]
@group(0) @binding(5) var<storage, read> x: array<f32>;       // [x_rows, cols]
@group(0) @binding(6) var<storage, read> bias: array<f32>;    // [w_rows] when has_bias, else unread

const WG: u32 = 64u;
const TM: u32 = 4u;
var<workgroup> red: array<f32, 256>;  // [TM, WG]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let g = wg.y * nwg.x + wg.x;
  let o = g % p.w_rows;
  let m0 = (g / p.w_rows) * TM;
  if (m0 >= p.x_rows) {
    return;
  }
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  for (var wi = lid; wi < p.words; wi += WG) {
    let word = w[o * p.words + wi];
    let i0 = wi * PER;
    let grp = o * p.groups + i0 / GROUP;
    let s = scale_at(grp);
    let b = bias_at(grp);
    for (var j = 0u; j < PER; j++) {
      let prod = f32((word >> (BITS * j)) & MASK) * s;
      let wv = prod + b;
      for (var r = 0u; r < TM; r++) {
        if (m0 + r < p.x_rows) {
          acc[r] += wv * x[(m0 + r) * p.cols + i0 + j];
        }
      }
    }
  }
  for (var r = 0u; r < TM; r++) {
    red[r * WG + lid] = acc[r];
  }
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      for (var r = 0u; r < TM; r++) {
        red[r * WG + lid] += red[r * WG + lid + s];
      }
    }
    workgroupBarrier();
  }
  if (lid < TM && m0 + lid < p.x_rows) {
    var y = red[lid * WG];
    if (p.has_bias != 0u) {
      y += bias[o];
    }
    out[(m0 + lid) * p.out_stride + p.out_first + o] = y;
  }
}
