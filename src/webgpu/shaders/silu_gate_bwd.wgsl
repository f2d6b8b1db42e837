// The gradients of out = silu(up) * gate for separate up and gate tensors,
// elementwise (silu_gate_grads.wgsl).
struct Params {
  count: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<storage, read> gate: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> grad_up: array<f32>;
@group(0) @binding(5) var<storage, read_write> grad_gate: array<f32>;

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
  let d = silu_gate_grads(up[i], gate[i], dy[i]);
  grad_up[i] = d.x;
  grad_gate[i] = d.y;
}
