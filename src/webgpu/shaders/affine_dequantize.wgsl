// MLX affine-quantized weights W [out, in] -> dense f32, one invocation per
// element (the layout of affine_quant.wgsl, which precedes this file).
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;       // [w_rows, words]
@group(0) @binding(2) var<storage, read> scales: array<u32>;  // [w_rows, groups] as f32 or 16-bit pairs
@group(0) @binding(3) var<storage, read> biases: array<u32>;  // like scales
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [w_rows, cols]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.w_rows * p.cols) {
    return;
  }
  let o = i / p.cols;
  let c = i % p.cols;
  let q = (w[o * p.words + c / PER] >> (BITS * (c % PER))) & MASK;
  let g = o * p.groups + c / GROUP;
  let prod = f32(q) * scale_at(g);
  out[i] = prod + bias_at(g);
}
