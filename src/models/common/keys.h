// Counter-based keys for dropout masks and batch sampling, shared by every
// family's trainer: a key is a pure function of its inputs, so there is no
// generator state to save and a resumed run draws what it would have drawn.
#pragma once
#include <cstdint>

namespace forge::models {

// SplitMix64 finaliser: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A key that is a pure function of (seed, a, b, c).
inline uint64_t derive_key(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  return mix64(mix64(mix64(mix64(seed) ^ a) ^ b) ^ c);
}

}  // namespace forge::models
