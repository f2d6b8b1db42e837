// Inverted dropout: y[i] = x[i] * scale where the element's random word is
// >= threshold, else 0. The word is word 0 of Philox4x32-10 with counter
// (index mod 2^32, index div 2^32, 0, 0) and key (k0, k1), where index is the
// element's flat index in the whole tensor (base + i for this dispatch), so
// that the mask does not depend on how the work is split. u32 arithmetic
// only: bit-identical to the CPU kernel (src/cpu/nn_train.cpp).
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

// High 32 bits of the 64-bit product a * b, from 16-bit halves.
fn mulhi(a: u32, b: u32) -> u32 {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}

fn philox_word0(lo: u32, hi: u32, key0: u32, key1: u32) -> u32 {
  var c = vec4u(lo, hi, 0u, 0u);
  var k0 = key0;
  var k1 = key1;
  for (var round = 0u; round < 10u; round++) {
    let m0 = 0xD2511F53u;
    let m1 = 0xCD9E8D57u;
    c = vec4u(mulhi(m1, c.z) ^ c.y ^ k0, m1 * c.z, mulhi(m0, c.x) ^ c.w ^ k1, m0 * c.x);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c.x;
}

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
