// The gradients of out = silu(u) * g for one element and its output
// gradient dy: with s = sigmoid(u), (d/du, d/dg) = (dy g s (1 + u (1 - s)),
// dy u s). Shared by silu_gate_bwd.wgsl and silu_gate_packed_bwd.wgsl.
fn silu_gate_grads(u: f32, g: f32, dy: f32) -> vec2f {
  let s = 1.0 / (1.0 + exp(-u));
  return vec2f(dy * g * (s * (1.0 + u * (1.0 - s))), dy * (u * s));
}
