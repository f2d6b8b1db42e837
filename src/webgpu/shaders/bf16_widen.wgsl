// out[i] = f32 of the bf16 value i of x (two to a u32 word, the first in the
// low half): the dense f32 weight behind a bf16 one, for products over many
// rows (the tiled matmul) and for callers that need W itself.
struct Params {
  n: u32,  // values in this dispatch
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;         // [ceil(n / 2)]
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // [n]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.n) {
    return;
  }
  let w = x[i / 2u];
  out[i] = bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));
}
