// out = silu(up) * gate, elementwise, one invocation per element
// (silu_gate_bwd.wgsl is its gradient).
struct Params {
  count: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read> gate: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

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
  let u = up[i];
  out[i] = u / (1.0 + exp(-u)) * gate[i];
}
