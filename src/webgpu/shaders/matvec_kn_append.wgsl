// Shared snippet (no entry point) of matvec.wgsl, in place of
// matvec_kn_store.wgsl: main_kn computes one token's packed q/k/v row
// [3C] (GPT-2's c_attn, n = 3C) and stores q in C [C] and k and v straight
// into their cache slots, so that a decode step needs no separate append
// (qkv_append.wgsl). One row (m = 1); kc and vc are bound at the slot.
@group(0) @binding(8) var<storage, read_write> kc: array<f32>;  // [C]: the k cache's slot
@group(0) @binding(9) var<storage, read_write> vc: array<f32>;  // [C]: the v cache's slot

fn kn_store(ci: u32, col: u32, v: f32) {
  let o = finish(v, ci);
  let width = p.n / 3u;
  if (col < width) {
    C[col] = o;
  } else if (col < 2u * width) {
    kc[col - width] = o;
  } else {
    vc[col - 2u * width] = o;
  }
}
