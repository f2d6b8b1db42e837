// Shared snippet (no entry point): a weight matrix of f32 values read four at
// a time. Prepended to a kernel that binds its weights as array<WeightVec4>
// and reads them through weight4 (weights_bf16.wgsl is its 16-bit twin).
alias WeightVec4 = vec4f;

fn weight4(w: vec4f) -> vec4f {
  return w;
}
