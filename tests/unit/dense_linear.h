// A dense Linear over a weight w [out, in], for tests of the linear layer's
// products and backward.
#pragma once
#include "forge/linear.h"

namespace forge::testing {

inline models::Linear dense_linear(const Tensor& w) {
  models::Linear l;
  l.w = w;
  l.out = w.dim(0);
  l.in = w.dim(1);
  return l;
}

}  // namespace forge::testing
