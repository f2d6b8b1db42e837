// Elementwise binary ops over f32: out[i] = a[i] (op) b[i].
// OP: 0 add, 1 sub, 2 mul.
override OP: u32 = 0u;

struct Params {
  count: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  switch OP {
    case 1u: { out[i] = a[i] - b[i]; }
    case 2u: { out[i] = a[i] * b[i]; }
    default: { out[i] = a[i] + b[i]; }
  }
}
