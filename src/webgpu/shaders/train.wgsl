// Elementwise training updates, in place on `dst` (one invocation per
// element): `axpy` dst += alpha * a (sgd, gradient accumulation), `scale`
// dst *= alpha, `clip` dst *= min(1, max_norm / (sqrt(norm_sq[0]) + 1e-6))
// (norm_sq bound as `a`), and `mse` dst = 0.5 (a - b)^2.
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
fn axpy(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = index(wg, nwg, lid);
  if (i < p.count) {
    dst[i] = dst[i] + p.alpha * a[i];
  }
}

@compute @workgroup_size(256)
fn scale(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) lid: u32) {
  let i = index(wg, nwg, lid);
  if (i < p.count) {
    dst[i] = dst[i] * p.alpha;
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

@compute @workgroup_size(256)
fn mse(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
       @builtin(local_invocation_index) lid: u32) {
  let i = index(wg, nwg, lid);
  if (i < p.count) {
    let d = a[i] - b[i];
    dst[i] = 0.5 * (d * d);
  }
}
