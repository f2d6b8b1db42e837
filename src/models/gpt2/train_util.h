// Helpers shared by the GPT-2 training files: counter-based keys for dropout
// and batch sampling, Conv1D.
#pragma once
#include <cstdint>
#include <string>

#include "forge/gpt2.h"
#include "forge/ops.h"

namespace forge::gpt2 {

// SplitMix64 finaliser: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A key that is a pure function of (seed, a, b, c): no generator state to save.
inline uint64_t derive_key(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  return mix64(mix64(mix64(mix64(seed) ^ a) ^ b) ^ c);
}

// Conv1D: x [N, in] @ w [in, out] + b [out] -> [N, out].
inline Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b) {
  MatmulOptions o;
  o.bias = &b;
  return matmul(x, w, o);
}

}  // namespace forge::gpt2
