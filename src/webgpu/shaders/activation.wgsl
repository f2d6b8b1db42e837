// Elementwise maps over f32, y[i] = f(x[i]): the activations and scale.
// OP: 0 gelu (tanh approximation, gelu.wgsl's, which precedes this), 1
// relu, 2 silu, 3 x * alpha. Preceded by elementwise_block.wgsl too.
override OP: u32 = 0u;

struct Params {
  count: u32,
  alpha: f32,  // OP 3's
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

fn act(v: f32) -> f32 {
  switch OP {
    case 1u: { return max(v, 0.0); }
    case 2u: { return v / (1.0 + exp(-v)); }
    case 3u: { return v * p.alpha; }
    default: { return gelu_tanh(v); }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let first = ew_first(wg, nwg, lid);
  var v: array<f32, EW_PER>;
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      v[e] = x[i];
    }
  }
  for (var e = 0u; e < EW_PER; e++) {
    let i = first + 256u * e;
    if (i < p.count) {
      y[i] = act(v[e]);
    }
  }
}
