// Element types of forge tensors.
// f32 and u32 are what kernels compute in; f16, bf16, i32, i64 and u8 exist for
// storage and I/O (checkpoints, token ids) and are converted at the edges.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace forge {

enum class DType : uint8_t { F32, U32, I32, I64, F16, BF16, U8 };

// Bytes per element.
size_t dtype_size(DType t);
// Lower-case name: "f32", "bf16", ...
const char* dtype_name(DType t);
// Inverse of dtype_name; throws forge::Error for an unknown name.
DType dtype_from_name(const std::string& name);

// Scalar conversions used by I/O (round-to-nearest-even for narrowing).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);

}  // namespace forge
