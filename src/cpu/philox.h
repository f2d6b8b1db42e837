// Word 0 of Philox4x32-10 for counter (lo, hi, 0, 0) and key (k0, k1): the
// random stream of dropout, attention dropout and sampling (mirrored by
// shaders/philox.wgsl). Inline and u32/u64 arithmetic only, so a loop calling
// it vectorizes (each 32 x 32 -> 64-bit product is one vpmuludq lane) and
// every ISA gives the same words.
#pragma once
#include <cstdint>

namespace forge::cpu {

inline uint32_t philox_word0(uint32_t lo, uint32_t hi, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // key schedule increments
  uint32_t c0 = lo, c1 = hi, c2 = 0, c3 = 0;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * c0;
    const uint64_t p1 = uint64_t(kM1) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = uint32_t(p1);
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = uint32_t(p0);
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return c0;
}

}  // namespace forge::cpu
