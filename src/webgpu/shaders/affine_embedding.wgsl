// Rows of an MLX affine-quantized table W [V, in] gathered by id and
// dequantized (the layout of affine_quant.wgsl, which precedes this file), one
// invocation per output element. An id >= V writes NaN: ids on the device
// cannot be range checked without a sync point, so the error shows instead.
@group(0) @binding(0) var<uniform> p: Params;  // w_rows = V, x_rows = ids in this dispatch
@group(0) @binding(1) var<storage, read> w: array<u32>;       // [V, words]
@group(0) @binding(2) var<storage, read> scales: array<u32>;  // [V, groups] as f32 or 16-bit pairs
@group(0) @binding(3) var<storage, read> biases: array<u32>;  // like scales
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [x_rows, cols]
@group(0) @binding(5) var<storage, read> ids: array<u32>;     // [x_rows] (i32 ids read as u32)

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.x_rows * p.cols) {
    return;
  }
  let o = ids[i / p.cols];
  if (o >= p.w_rows) {
    // Or'd with a runtime zero: a constant NaN does not compile.
    out[i] = bitcast<f32>(0x7fc00000u | (o & 0u));
    return;
  }
  let c = i % p.cols;
  let q = (w[o * p.words + c / PER] >> (BITS * (c % PER))) & MASK;
  let g = o * p.groups + c / GROUP;
  let prod = f32(q) * scale_at(g);
  out[i] = prod + bias_at(g);
}
