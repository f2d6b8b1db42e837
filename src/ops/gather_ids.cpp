#include "ops/gather_ids.h"

#include <string>

namespace forge::gather {

void check_ids_dtype(const char* op, const Tensor& ids) {
  if (!ids.defined()) throw Error(std::string("[") + op + "] undefined tensor argument");
  if (ids.dtype() != DType::U32 && ids.dtype() != DType::I32)
    throw DTypeError(std::string("[") + op + "] ids must be u32 or i32, got " + ids.describe());
}

int64_t id_at(const Tensor& ids, int64_t r) {
  return ids.dtype() == DType::U32 ? int64_t(ids.data<uint32_t>()[r]) : int64_t(ids.data<int32_t>()[r]);
}

Tensor ids_for(const char* op, const Tensor& ids, int64_t bound, const Device& device) {
  if (ids.device().is_cpu()) {
    const int64_t n = ids.numel();
    for (int64_t r = 0; r < n; ++r) {
      const int64_t v = id_at(ids, r);
      if (v < 0 || v >= bound)
        throw ValueError(std::string("[") + op + "] id " + std::to_string(v) + " at row " + std::to_string(r) +
                         " of ids " + shape_str(ids.shape()) + " is out of range [0, " + std::to_string(bound) +
                         ")");
    }
    return device.is_cpu() ? ids : ids.to(device);
  }
  if (ids.device() != device)
    throw DeviceError(std::string("[") + op + "] ids " + ids.describe() + " on another device than the data (" +
                      device.name() + ")");
  return ids;
}

Shape leading_shape(const Tensor& t) {
  Shape s = t.shape();
  if (!s.empty()) s.pop_back();
  return s;
}

}  // namespace forge::gather
