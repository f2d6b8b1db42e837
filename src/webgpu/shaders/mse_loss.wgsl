// dst = 0.5 (a - b)^2 (the unreduced MSE loss of pred a and target b), one
// invocation per element.
struct Params {
  count: u32,
  alpha: f32,
  max_norm: f32,
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;

fn index(wg: vec3u, nwg: vec3u, lid: u32) -> u32 {
  return (wg.y * nwg.x + wg.x) * 256u + lid;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = index(wg, nwg, lid);
  if (i < p.count) {
    let d = a[i] - b[i];
    dst[i] = 0.5 * (d * d);
  }
}
