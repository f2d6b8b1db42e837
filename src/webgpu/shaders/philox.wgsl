// Shared snippet (no entry point): the counter-based random stream of dropout.
// Prepended as text to the kernels that draw from it (webgpu/composed_kernel.h); the
// CPU twin is cpu::philox_word0 (src/cpu/philox.h). u32 arithmetic only,
// so both produce the same bits.

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

// Word 0 of Philox4x32-10 with counter (lo, hi, 0, 0) and key (key0, key1).
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
