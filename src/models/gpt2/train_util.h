// Helpers shared by the GPT-2 training files: the counter-based keys of
// models/common/keys.h (dropout, batch sampling) and Conv1D.
#pragma once
#include <cstdint>
#include <string>

#include "forge/gpt2.h"
#include "forge/ops.h"
#include "models/common/keys.h"

namespace forge::gpt2 {

using models::derive_key;  // models/common/keys.h
using models::mix64;

// Conv1D: x [N, in] @ w [in, out] + b [out] -> [N, out].
inline Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b) {
  MatmulOptions o;
  o.bias = &b;
  return matmul(x, w, o);
}

}  // namespace forge::gpt2
