// Shared snippet (no entry point) of matvec.wgsl: where main_kn puts an
// output value v of column col at C's index ci (after matvec_fusions.wgsl).
// This one writes C through the fusions' epilogue; matvec_kn_append.wgsl
// writes a packed q/k/v row's k and v into their cache slots instead.
fn kn_store(ci: u32, col: u32, v: f32) {
  C[ci] = finish(v, ci);
}
