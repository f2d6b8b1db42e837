// Shared snippet (no entry point) of the kernels that mark the output of an
// out-of-range id (embedding, gather_nll, ce_bwd, cross_entropy): a quiet
// NaN, built from a runtime value because WGSL rejects a NaN constant
// expression.
fn nan_f32(runtime_zero: u32) -> f32 {
  return bitcast<f32>(0x7fc00000u | runtime_zero);
}
