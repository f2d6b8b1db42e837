// The resolved geometry of a matmul or softmax call, computed once by the op
// layer and shared by both backends.
#pragma once
#include <algorithm>
#include <cstdint>

#include "forge/ops/core.h"

namespace forge {

struct MatmulPlan {
  int64_t batch = 1;     // output batch (1 for rank-2 results)
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  Triangle a_triangle = Triangle::Full;  // the part of op(A) read; the rest is zero
  Triangle c_triangle = Triangle::Full;  // the part of C computed; the rest is written as zero
  float alpha = 1.0f;
  int64_t a_batch_stride = 0;  // elements between batch items of A (0 = broadcast)
  int64_t b_batch_stride = 0;  // elements between batch items of B (0 = broadcast)
  int64_t lda = 0, ldb = 0;    // row strides (elements) of A and B as stored
  // Output placement, for writing a column block of a wider result (the
  // chunked LM head): C's row stride (0 = n) and the elements before C's
  // first output; A's first element. Defaults give a dense [batch, m, n] C.
  int64_t ldc = 0;
  int64_t c_offset = 0;
  int64_t a_offset = 0;
  // Batch item z as (outer, head) = (z / heads, z % heads), for attention's
  // [B, H] heads over token-major operands (WebGPU's kernels only): B's item
  // at outer * b_batch_stride + (head / b_group) * b_head_stride (a GQA
  // group's query heads share their KV head), C's at c_offset + outer *
  // c_batch_stride + head * c_head_stride (both 0: C dense after c_offset).
  // heads = 1: B's item z at z * b_batch_stride.
  int64_t heads = 1, b_group = 1;
  int64_t b_head_stride = 0, c_batch_stride = 0, c_head_stride = 0;
  // C += the product (BLAS's beta = 1) instead of C = it; C dense.
  bool accumulate = false;
};

// Runs a resolved plan on a's device into out, the op layer's one way in to
// both backends' kernels: an accumulating plan that the device's kernels do
// not take in their store runs as the product into a temporary and
// gradient_accumulate (the same floats: out + product).
void run_matmul_plan(const Tensor& a, const Tensor& b, const Tensor* bias, const MatmulPlan& plan, Tensor& out);

struct SoftmaxPlan {
  int64_t rows = 0, cols = 0;
  bool causal = false;
  int64_t q_len = 1;
  int64_t key_offset = 0;
  // Keys [0, visible(r)) of row r take part (row r is query r % q_len); the
  // rest are masked.
  int64_t visible(int64_t r) const { return causal ? std::min(cols, r % q_len + key_offset + 1) : cols; }
};

}  // namespace forge
