// out = silu(up) * gate, elementwise, one invocation per element of out
// [rows, n]. up and gate are read at row r, column c as up[r * stride + c]
// and gate[r * stride + gate_offset + c]: separate tensors (stride = n,
// gate_offset = 0), or one joined product [rows, 2n] = [up | gate] bound
// twice (stride = 2n, gate_offset = n). silu_gate_bwd.wgsl and
// silu_gate_packed_bwd.wgsl are its gradients.
struct Params {
  count: u32,
  n: u32,
  stride: u32,
  gate_offset: u32,
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
  let r = i / p.n;
  let at = r * p.stride + (i - r * p.n);
  let u = up[at];
  out[i] = u / (1.0 + exp(-u)) * gate[at + p.gate_offset];
}
