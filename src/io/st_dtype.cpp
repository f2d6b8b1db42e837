// The safetensors dtype table and its mapping to forge::DType.
#include <array>

#include "forge/error.h"
#include "forge/safetensors.h"

namespace forge {

namespace {
struct StDTypeRow {
  StDType type;
  const char* name;
  size_t size;
};
constexpr std::array<StDTypeRow, 15> kRows{{
    {StDType::BOOL, "BOOL", 1},   {StDType::U8, "U8", 1},       {StDType::I8, "I8", 1},
    {StDType::F8_E5M2, "F8_E5M2", 1}, {StDType::F8_E4M3, "F8_E4M3", 1}, {StDType::I16, "I16", 2},
    {StDType::U16, "U16", 2},     {StDType::F16, "F16", 2},     {StDType::BF16, "BF16", 2},
    {StDType::I32, "I32", 4},     {StDType::U32, "U32", 4},     {StDType::F32, "F32", 4},
    {StDType::F64, "F64", 8},     {StDType::I64, "I64", 8},     {StDType::U64, "U64", 8},
}};

const StDTypeRow& row(StDType t) {
  for (const auto& r : kRows)
    if (r.type == t) return r;
  throw Error("[safetensors] invalid StDType value " + std::to_string(int(t)));
}
}  // namespace

size_t st_dtype_size(StDType t) { return row(t).size; }
const char* st_dtype_name(StDType t) { return row(t).name; }

std::optional<StDType> st_dtype_from_name(std::string_view name) {
  for (const auto& r : kRows)
    if (name == r.name) return r.type;
  return std::nullopt;
}

std::optional<DType> to_dtype(StDType t) {
  switch (t) {
    case StDType::F32: return DType::F32;
    case StDType::U32: return DType::U32;
    case StDType::I32: return DType::I32;
    case StDType::I64: return DType::I64;
    case StDType::F16: return DType::F16;
    case StDType::BF16: return DType::BF16;
    case StDType::U8: return DType::U8;
    default: return std::nullopt;
  }
}

StDType from_dtype(DType t) {
  switch (t) {
    case DType::F32: return StDType::F32;
    case DType::U32: return StDType::U32;
    case DType::I32: return StDType::I32;
    case DType::I64: return StDType::I64;
    case DType::F16: return StDType::F16;
    case DType::BF16: return StDType::BF16;
    case DType::U8: return StDType::U8;
  }
  throw Error("[safetensors] invalid DType value " + std::to_string(int(t)));
}

}  // namespace forge
