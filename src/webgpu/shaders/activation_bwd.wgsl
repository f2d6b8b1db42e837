// Activation gradients over f32: dx[i] = f'(x[i]) * dy[i].
// OP: 0 gelu (tanh approximation), 1 relu, 2 silu.
// With s = sigmoid(2u) and s' = sigmoid(-2u) = 1 - s:
// gelu'(x) = s + 2 x s s' sqrt(2/pi) (1 + 3 * 0.044715 x^2).
// GELU_K and GELU_C: gelu.wgsl's, which precedes this (as does
// elementwise_block.wgsl).
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

fn grad(v: f32, g: f32) -> f32 {
  switch OP {
    case 1u: { return select(0.0, g, v > 0.0); }
    case 2u: {
      let s = 1.0 / (1.0 + exp(-v));
      let sc = 1.0 / (1.0 + exp(v));
      return s * (1.0 + v * sc) * g;
    }
    default: {
      let u = GELU_K * (v + GELU_C * v * v * v);
      let s = 1.0 / (1.0 + exp(-2.0 * u));
      let sc = 1.0 / (1.0 + exp(2.0 * u));
      return (s + 2.0 * v * s * sc * GELU_K * (1.0 + 3.0 * GELU_C * v * v)) * g;
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let first = ew_first(wg, nwg, lid);
  var v: array<f32, EW_PER>;
  var g: array<f32, EW_PER>;
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      v[e] = x[i];
      g[e] = dy[i];
    }
  }
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      dx[i] = grad(v[e], g[e]);
    }
  }
}
