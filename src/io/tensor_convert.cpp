// TensorView conversions to f32. Elements are copied with memcpy because the
// format does not promise alignment of a tensor's bytes.
#include <cstring>

#include "forge/error.h"
#include "forge/safetensors.h"

namespace forge {

namespace {

template <typename T, typename F>
void convert_each(std::span<const std::byte> in, std::span<float> out, F to_float) {
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, in.data() + i * sizeof(T), sizeof(T));
    out[i] = to_float(v);
  }
}

}  // namespace

int64_t TensorView::numel() const { return int64_t(info->nbytes() / st_dtype_size(info->dtype)); }

void TensorView::to_f32(std::span<float> out) const {
  if (dtype() != StDType::F32 && dtype() != StDType::F16 && dtype() != StDType::BF16 && dtype() != StDType::I32 &&
      dtype() != StDType::I64 && dtype() != StDType::U32 && dtype() != StDType::U8)
    throw DTypeError(std::string("[safetensors] unsupported dtype ") + st_dtype_name(dtype()) + " for tensor '" +
                     name() + "' in " + *origin);
  if (int64_t(out.size()) != numel())
    throw ShapeError("[safetensors] tensor '" + name() + "' " + shape_str(shape()) + " has " +
                     std::to_string(numel()) + " elements but the output buffer holds " + std::to_string(out.size()) +
                     " in " + *origin);
  switch (dtype()) {
    case StDType::F32:
      if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
      return;
    case StDType::F16: return convert_each<uint16_t>(bytes, out, f16_to_f32);
    case StDType::BF16: return convert_each<uint16_t>(bytes, out, bf16_to_f32);
    case StDType::I32: return convert_each<int32_t>(bytes, out, [](int32_t v) { return float(v); });
    case StDType::I64: return convert_each<int64_t>(bytes, out, [](int64_t v) { return float(v); });
    case StDType::U32: return convert_each<uint32_t>(bytes, out, [](uint32_t v) { return float(v); });
    case StDType::U8: return convert_each<uint8_t>(bytes, out, [](uint8_t v) { return float(v); });
    default: return;  // refused above
  }
}

std::vector<float> TensorView::to_f32() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  to_f32(std::span<float>(out));
  return out;
}

}  // namespace forge
