#include "forge/dtype.h"

#include <cstring>

#include "forge/error.h"

namespace forge {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::U32: case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::F16: case DType::BF16: return 2;
    case DType::U8: return 1;
  }
  throw Error("[dtype] invalid dtype value");
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::U32: return "u32";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::U8: return "u8";
  }
  return "invalid";
}

DType dtype_from_name(const std::string& name) {
  for (DType t : {DType::F32, DType::U32, DType::I32, DType::I64, DType::F16, DType::BF16, DType::U8})
    if (name == dtype_name(t)) return t;
  throw Error("[dtype] unknown dtype '" + name + "'");
}

static uint32_t bits_of(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static float float_of(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

float bf16_to_f32(uint16_t b) { return float_of(uint32_t(b) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return float_of(sign);
    // subnormal: normalise
    int e = -1;
    do { man <<= 1; ++e; } while (!(man & 0x400u));
    return float_of(sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ffu) << 13);
  }
  if (exp == 31) return float_of(sign | 0x7f800000u | man << 13);
  return float_of(sign | (exp + 112) << 23 | man << 13);
}

uint16_t f32_to_f16(float f) {
  uint32_t u = bits_of(f), sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);       // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);      // overflow -> inf
  if (a < 0x38800000u) {                                      // subnormal or zero
    if (a < 0x33000000u) return uint16_t(sign);
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                                 // 14..24
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = a - 0x38000000u;                               // rebias exponent
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

}  // namespace forge
