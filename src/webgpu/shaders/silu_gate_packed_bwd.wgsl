// The gradient of out = silu(up) * gate over one joined product gu
// [rows, 2n] = [up | gate] (silu_gate.wgsl's second layout): dgu, in gu's
// layout, from dy [rows, n]; one invocation per element of dy
// (silu_gate_grads.wgsl).
struct Params {
  count: u32,
  n: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gu: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dgu: array<f32>;

fn index(wg: vec3u, nwg: vec3u, lid: u32) -> u32 {
  return (wg.y * nwg.x + wg.x) * 256u + lid;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = index(wg, nwg, lid);
  if (i >= p.count) {
    return;
  }
  let r = i / p.n;
  let at = r * 2u * p.n + (i - r * p.n);
  let d = silu_gate_grads(gu[at], gu[at + p.n], dy[i]);
  dgu[at] = d.x;
  dgu[at + p.n] = d.y;
}
