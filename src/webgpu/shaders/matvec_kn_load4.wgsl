// Shared snippet (no entry point) of matvec.wgsl, in place of
// matvec_kn_load.wgsl: main_kn reads B [k, n] as vec4s (n, ldb and B's
// offsets multiples of 4, as the host checks): a quarter of the load
// instructions. On an H100, GPT-2 124M decoded at 1,366-1,370 tokens/s
// against 1,229-1,241 with four scalar loads (three calls each, one
// command, 8 columns a workgroup both). B's binding declared again
// with vec4 elements: main_kn uses only this one and the other entry points
// only B, and WGSL allows one binding to two variables that no entry point
// both uses.
@group(0) @binding(2) var<storage, read> B4: array<vec4f>;

fn kn_load(i: u32) -> vec4f {
  return B4[i / 4u];
}
