// Shared snippet (no entry point) of matvec.wgsl: how main_kn reads the 4
// adjacent columns of B [k, n] that start at element i (a multiple of 4).
// This one: four scalar loads, for any B; matvec_kn_load4.wgsl: one vec4
// load, where B's strides and offsets are whole vec4s.
fn kn_load(i: u32) -> vec4f {
  return vec4f(B[i], B[i + 1u], B[i + 2u], B[i + 3u]);
}
