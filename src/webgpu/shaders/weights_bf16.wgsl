// Shared snippet (no entry point): a weight matrix of bf16 values, two to a
// u32 (the first in the low half, as a little-endian file stores them), read
// four at a time. Without shader-f16 a bf16 is the top half of an f32, so a
// shift or a mask widens it exactly; the products stay f32.
alias WeightVec4 = vec2u;

fn weight4(w: vec2u) -> vec4f {
  return vec4f(bitcast<f32>(w.x << 16u), bitcast<f32>(w.x & 0xffff0000u), bitcast<f32>(w.y << 16u),
               bitcast<f32>(w.y & 0xffff0000u));
}
