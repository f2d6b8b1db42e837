// forge::Tensor: a dense row-major array whose storage lives on the CPU or a
// WebGPU device. Copies of a Tensor share storage (like a shared_ptr);
// reshape returns a view of the same storage.
//
// Threads: distinct Tensor objects may be used from different threads at
// once, also when they share storage, as long as no thread writes that
// storage meanwhile (copy_from, in-place optimizer updates) -- like a
// std::vector shared between threads. One Tensor object is not to be assigned
// in one thread while another reads it.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "forge/device.h"
#include "forge/dtype.h"
#include "forge/error.h"
#include "forge/shape.h"

namespace forge {

namespace gpu {
class Buffer;
}
struct Storage;

template <class T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::U32; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::U8; }

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // Uninitialised storage.
  static Tensor empty(const Shape& shape, DType dtype = DType::F32, const Device& device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, const Device& device = Device::cpu());
  // Copies numel(shape) * dtype_size(dtype) bytes from `data`.
  static Tensor from_data(const void* data, const Shape& shape, DType dtype, const Device& device = Device::cpu());
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, const Device& device = Device::cpu()) {
    if (int64_t(values.size()) != forge::numel(shape))
      throw ShapeError("[tensor] " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
    return from_data(values.data(), shape, dtype_of<T>(), device);
  }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return int(shape_.size()); }
  // Extent of dimension i; negative i counts from the end.
  int64_t dim(int i) const;
  int64_t numel() const { return forge::numel(shape_); }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype_); }
  const Device& device() const;
  // "f32[2, 3] on cpu"
  std::string describe() const;

  // A copy on another device (or the same tensor when already there).
  Tensor to(const Device& device) const;
  // A copy with fresh storage on the same device.
  Tensor clone() const;
  // A view with another shape of the same number of elements.
  Tensor reshape(const Shape& shape) const;
  // Rows [begin, end) of dimension 0, as a view. On WebGPU the byte offset
  // must meet the device's storage offset alignment.
  Tensor slice_rows(int64_t begin, int64_t end) const;
  // The parts as one tensor, their rows concatenated, when they lie back to
  // back in one storage (views of one allocation, in order) with one dtype
  // and the same trailing dims: a view, no copy. Otherwise an undefined tensor.
  static Tensor joined_rows(const std::vector<Tensor>& parts);
  // Copies src's values into this tensor (same shape and dtype, any devices).
  void copy_from(const Tensor& src);

  // Values as a host vector; T must match dtype(). A sync point on WebGPU.
  template <class T>
  std::vector<T> to_vector() const {
    check_dtype(dtype_of<T>(), "to_vector");
    std::vector<T> out(static_cast<size_t>(numel()));
    read_bytes(out.data());
    return out;
  }
  // Values converted to f32 from any dtype.
  std::vector<float> to_f32() const;
  // Copies nbytes() bytes to dst. A sync point on WebGPU.
  void read_bytes(void* dst) const;

  // CPU storage access; throws DeviceError on another device.
  template <class T>
  T* data() {
    check_dtype(dtype_of<T>(), "data");
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    check_dtype(dtype_of<T>(), "data");
    return static_cast<const T*>(raw_data());
  }
  void* raw_data() const;

  // WebGPU storage access; throws DeviceError on the CPU.
  const gpu::Buffer& buffer() const;
  uint64_t byte_offset() const;  // of this tensor's first byte in buffer()

  // The storage this tensor shares with its copies and views: an identity
  // for grouping handles, and its size in bytes.
  const void* storage_id() const { return storage_.get(); }
  uint64_t storage_bytes() const;
  // Moves the whole storage (every handle sharing it, copies and views
  // included) into `flat`, a tensor on the same device, from byte `at` of
  // flat's data on: the bytes are copied there and every handle reads and
  // writes there from then on (the old storage is released). `at` a
  // multiple of 256; the storage rounded up to 4 bytes must fit. How the
  // trainers gather parameters in flat buffers without touching the models.
  void move_storage_into(const Tensor& flat, uint64_t at) const;

 private:
  void check_dtype(DType t, const char* what) const;
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::F32;
  uint64_t offset_ = 0;  // bytes into the storage
};

}  // namespace forge
