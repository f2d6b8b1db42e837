// Activation gradients over f32: dx[i] = f'(x[i]) * dy[i].
// OP: 0 gelu (tanh approximation; gelu.wgsl's gelu_tanh_grad, which
// precedes this), 1 relu, 2 silu.
override OP: u32 = 0u;

struct Params {
  count: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let v = x[i];
  let g = dy[i];
  switch OP {
    case 1u: { dx[i] = select(0.0, g, v > 0.0); }
    case 2u: {
      let s = 1.0 / (1.0 + exp(-v));
      let sc = 1.0 / (1.0 + exp(v));
      dx[i] = s * (1.0 + v * sc) * g;
    }
    default: { dx[i] = gelu_tanh_grad(v) * g; }
  }
}
