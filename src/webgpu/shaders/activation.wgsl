// Activations over f32: y[i] = f(x[i]).
// OP: 0 gelu (tanh approximation, gelu.wgsl's, which precedes this), 1
// relu, 2 silu.
override OP: u32 = 0u;

struct Params {
  count: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let v = x[i];
  switch OP {
    case 1u: { y[i] = max(v, 0.0); }
    case 2u: { y[i] = v / (1.0 + exp(-v)); }
    default: { y[i] = gelu_tanh(v); }
  }
}
