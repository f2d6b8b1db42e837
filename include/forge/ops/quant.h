// Quantized weights: raw byte unpacking, MLX affine dequantization and the
// matmul that reads affine-quantized weights directly (see forge/ops.h for
// the conventions every op follows).
//
// MLX affine layout, for a weight W [out, in] quantized with `bits` in {2, 4, 8}
// and group_size in {32, 64, 128} (in % group_size == 0):
//   w_packed u32 [out, in * bits / 32]: 32 / bits values per word, value j of
//            a word in bits [bits * j, bits * (j + 1)) (little-endian order);
//   scales, biases [out, in / group_size] as f32, bf16 or f16 (both one dtype):
//            W[o, i] = q[o, i] * scale[o, i / group_size] + bias[o, i / group_size]
//            evaluated in f32 (the product rounded, then the sum).
// bf16 and f16 scales stay 16-bit on the device: the WGSL kernels read them as
// u32 words holding two values each and widen them (bf16: the bits shifted up
// by 16; f16: unpack2x16float), which is exact, as on the CPU.
#pragma once
#include <cstdint>

#include "forge/ops/core.h"

namespace forge {

// bytes u32 [.., n] -> f32 [.., 4 n]: element i is byte i of the packed words
// (byte 0 = the low 8 bits of word 0), as an unscaled value in [0, 255].
Tensor dequantize(const Tensor& bytes);

// The dense weight f32 [out, in] of an MLX affine-quantized matrix (layout
// above). ShapeError when the three tensors disagree, ValueError for an
// unsupported bits or group_size.
Tensor affine_dequantize(const Tensor& w_packed, const Tensor& scales, const Tensor& biases, int bits,
                         int group_size);

// x [.., in] -> [.., out] = x @ W^T (+ bias [out], f32, when given) for the
// affine-quantized W [out, in], without materialising W: each word is
// unpacked in registers. Products are accumulated in f32 on WebGPU and in
// double on the CPU; the bias is added to the f32 sum.
Tensor quantized_matmul(const Tensor& x, const Tensor& w_packed, const Tensor& scales, const Tensor& biases,
                        int bits, int group_size, const Tensor* bias = nullptr);

// Rows of an affine-quantized table W [V, in] gathered and dequantized: ids
// [T] or [B, T] (u32 or i32) -> [T, in] or [B, T, in], out[r] = W[ids[r]]
// (a quantized token embedding). Ids on the CPU are range checked
// (ValueError); an out-of-range id on the device gives a row of NaN.
Tensor affine_embedding(const Tensor& ids, const Tensor& w_packed, const Tensor& scales, const Tensor& biases,
                        int bits, int group_size);

}  // namespace forge
