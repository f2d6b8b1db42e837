// Inverted dropout: y[i] = x[i] * scale where the element's random word is
// >= threshold, else 0. The word is word 0 of Philox4x32-10 with counter
// (index mod 2^32, index div 2^32, 0, 0) and key (k0, k1), where index is the
// element's flat index in the whole tensor (base + i for this dispatch), so
// that the mask does not depend on how the work is split. u32 arithmetic
// only: bit-identical to the CPU kernel (src/cpu/nn_train.cpp). Preceded by
// philox.wgsl (philox_word0), prepended by the host (webgpu/composed_kernel.h).
struct Params {
  count: u32,
  base_lo: u32,  // flat index of this dispatch's first element
  base_hi: u32,
  threshold: u32,
  k0: u32,
  k1: u32,
  scale: f32,
  _pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wg.y * nwg.x + wg.x) * 256u + lid;
  if (i >= p.count) {
    return;
  }
  let lo = p.base_lo + i;
  let hi = p.base_hi + select(0u, 1u, lo < p.base_lo);
  let r = philox_word0(lo, hi, p.k0, p.k1);
  y[i] = select(0.0, x[i] * p.scale, r >= p.threshold);
}
