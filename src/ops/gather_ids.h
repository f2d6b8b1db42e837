// Token-id checks shared by the gather-family ops.
#pragma once
#include <cstdint>

#include "forge/tensor.h"

namespace forge::gather {

// ids are u32 or i32 (DTypeError otherwise).
void check_ids_dtype(const char* op, const Tensor& ids);
// Id r of ids on the CPU (u32 or i32), widened so that a negative i32 shows.
int64_t id_at(const Tensor& ids, int64_t r);
// The ids to hand to a kernel on `device`: ids on the CPU are range checked
// (every id in [0, bound), else ValueError naming the id and its row) and
// uploaded when `device` is a WebGPU device; ids already on `device` pass
// unchecked (see forge/ops/gather.h); ids on another device are a DeviceError.
Tensor ids_for(const char* op, const Tensor& ids, int64_t bound, const Device& device);
// dims [0, rank - 1) of t, e.g. [B, T] of a [B, T, V] tensor.
Shape leading_shape(const Tensor& t);

}  // namespace forge::gather
