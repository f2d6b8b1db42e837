// In-place training updates on `dst`, one invocation per element: `axpy`
// dst += alpha * a (sgd, gradient accumulation) and `clip`
// dst *= min(1, max_norm / (sqrt(a[0]) + 1e-6)) with a = the squared norm.
struct Params {
  count: u32,
  alpha: f32,
  max_norm: f32,
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;

fn index(wg: vec3u, nwg: vec3u, lid: u32) -> u32 {
  return (wg.y * nwg.x + wg.x) * 256u + lid;
}

@compute @workgroup_size(256)
fn axpy(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = index(wg, nwg, lid);
  if (i < p.count) {
    dst[i] = dst[i] + p.alpha * a[i];
  }
}

@compute @workgroup_size(256)
fn clip(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = index(wg, nwg, lid);
  if (i < p.count) {
    let coef = min(1.0, p.max_norm / (sqrt(a[0]) + 1e-6));
    dst[i] = dst[i] * coef;
  }
}
