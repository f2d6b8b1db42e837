#include "forge/tensor.h"

#include <cstdlib>

#include "core/host_heap.h"
#include "core/storage.h"

namespace forge {

void HostBytes::Free::operator()(std::byte* p) const { release_host_bytes(p, bytes); }

std::shared_ptr<Storage> Storage::allocate(const Device& device, size_t bytes) {
  if (device.is_cpu()) {
    auto* p = allocate_host_bytes(bytes);
    if (!p) throw Error("[tensor] out of host memory allocating " + std::to_string(bytes) + " bytes");
    HostBytes host{std::unique_ptr<std::byte[], HostBytes::Free>(p, HostBytes::Free{bytes}), bytes};
    return std::make_shared<Storage>(Storage{device, std::move(host), bytes, nullptr, 0});
  }
  // GPU buffers are padded to 4 bytes: copies and uploads move whole words.
  auto buf = device.runtime().allocate(std::max<uint64_t>(4, (bytes + 3) / 4 * 4));
  return std::make_shared<Storage>(Storage{device, std::move(buf), bytes, nullptr, 0});
}

static void check_shape(const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError("[tensor] negative extent in shape " + shape_str(shape));
}

// The shape's size in bytes; ShapeError for negative extents and for sizes
// past 2^62 bytes, whose element counts would overflow.
static size_t checked_bytes(const Shape& shape, DType dtype) {
  check_shape(shape);
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) {
    if (d && n > (uint64_t(1) << 62) / uint64_t(d))
      throw ShapeError("[tensor] shape " + shape_str(shape) + " of " + dtype_name(dtype) + " is too large to allocate");
    n *= uint64_t(d);
  }
  return size_t(n);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  const size_t bytes = checked_bytes(shape, dtype);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  try {
    t.storage_ = Storage::allocate(device, bytes);
  } catch (const GpuError& e) {
    // The runtime knows bytes; name the tensor the user asked for.
    throw GpuError("[tensor] cannot allocate " + std::string(dtype_name(dtype)) + " " + shape_str(shape) + " (" +
                   std::to_string(bytes) + " bytes) on " + device.name() + ": " + e.what());
  }
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, const Device& device) {
  Tensor t = empty(shape, dtype, device);
  if (device.is_cpu()) {
    std::memset(t.raw_data(), 0, t.nbytes());
  } else {
    device.runtime().clear(t.buffer(), 0, (t.nbytes() + 3) / 4 * 4);
  }
  return t;
}

Tensor Tensor::from_data(const void* data, const Shape& shape, DType dtype, const Device& device) {
  Tensor t = empty(shape, dtype, device);
  size_t n = t.nbytes();
  if (device.is_cpu()) {
    if (n) std::memcpy(t.raw_data(), data, n);
  } else if (n) {
    size_t padded = (n + 3) / 4 * 4;
    if (padded == n) {
      device.runtime().upload(t.buffer(), 0, data, n);
    } else {
      std::vector<std::byte> tmp(padded);
      std::memcpy(tmp.data(), data, n);
      device.runtime().upload(t.buffer(), 0, tmp.data(), padded);
    }
  }
  return t;
}

int64_t Tensor::dim(int i) const {
  int r = rank();
  int j = i < 0 ? i + r : i;
  if (j < 0 || j >= r)
    throw ShapeError("[tensor] dim " + std::to_string(i) + " out of range for shape " + shape_str(shape_));
  return shape_[size_t(j)];
}

const Device& Tensor::device() const {
  if (!storage_) throw Error("[tensor] undefined tensor");
  return storage_->device;
}

std::string Tensor::describe() const {
  if (!storage_) return "undefined";
  return std::string(dtype_name(dtype_)) + shape_str(shape_) + " on " + device().name();
}

void Tensor::check_dtype(DType t, const char* what) const {
  if (t != dtype_)
    throw DTypeError(std::string("[tensor] ") + what + " as " + dtype_name(t) + " of a " + describe());
}

void* Tensor::raw_data() const {
  if (!storage_) throw Error("[tensor] undefined tensor");
  auto* host = std::get_if<HostBytes>(&storage_->holder().data);
  if (!host) throw DeviceError("[tensor] host access to " + describe());
  return host->bytes.get() + byte_offset();
}

const gpu::Buffer& Tensor::buffer() const {
  if (!storage_) throw Error("[tensor] undefined tensor");
  auto* buf = std::get_if<std::shared_ptr<gpu::Buffer>>(&storage_->holder().data);
  if (!buf) throw DeviceError("[tensor] GPU buffer of " + describe());
  return **buf;
}

uint64_t Tensor::byte_offset() const { return (storage_ ? storage_->offset_in_holder() : 0) + offset_; }

uint64_t Tensor::storage_bytes() const {
  if (!storage_) throw Error("[tensor] undefined tensor");
  return storage_->bytes;
}

void Tensor::move_storage_into(const Tensor& flat, uint64_t at) const {
  if (!storage_ || !flat.storage_) throw Error("[move_storage_into] undefined tensor");
  if (!(device() == flat.device()))
    throw DeviceError("[move_storage_into] " + describe() + " into " + flat.describe() + " on another device");
  for (const Storage* s = flat.storage_.get(); s; s = s->home.get())
    if (s == storage_.get()) throw ValueError("[move_storage_into] " + describe() + " into its own storage");
  const uint64_t bytes = (storage_->bytes + 3) / 4 * 4;
  if ((flat.byte_offset() + at) % 256 || at + bytes > flat.nbytes())
    throw ShapeError("[move_storage_into] " + std::to_string(bytes) + " bytes at byte " + std::to_string(at) +
                     " do not fit " + flat.describe() + " (or the offset is not a multiple of 256)");
  Tensor whole = *this;  // the storage from its first byte
  whole.offset_ = 0;
  if (device().is_cpu()) {
    if (bytes) std::memcpy(static_cast<std::byte*>(flat.raw_data()) + at, whole.raw_data(), storage_->bytes);
  } else if (bytes) {
    device().runtime().copy(whole.buffer(), whole.byte_offset(), flat.buffer(), flat.byte_offset() + at, bytes);
  }
  storage_->home = flat.storage_;
  storage_->base = flat.offset_ + at;
  if (device().is_cpu()) storage_->data = HostBytes{};
  else storage_->data = std::shared_ptr<gpu::Buffer>();
}

void Tensor::read_bytes(void* dst) const {
  size_t n = nbytes();
  if (n == 0) return;
  if (device().is_cpu()) {
    std::memcpy(dst, raw_data(), n);
    return;
  }
  size_t padded = (n + 3) / 4 * 4;
  if (padded == n && byte_offset() % 4 == 0) {
    device().runtime().download(buffer(), byte_offset(), dst, n);
  } else {
    std::vector<std::byte> tmp(padded);
    device().runtime().download(buffer(), byte_offset(), tmp.data(), padded);
    std::memcpy(dst, tmp.data(), n);
  }
}

std::vector<float> Tensor::to_f32() const {
  std::vector<std::byte> raw(nbytes());
  read_bytes(raw.data());
  std::vector<float> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    const std::byte* p = raw.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DType::F32: { float v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DType::U32: { uint32_t v; std::memcpy(&v, p, 4); out[i] = float(v); break; }
      case DType::I32: { int32_t v; std::memcpy(&v, p, 4); out[i] = float(v); break; }
      case DType::I64: { int64_t v; std::memcpy(&v, p, 8); out[i] = float(v); break; }
      case DType::F16: { uint16_t v; std::memcpy(&v, p, 2); out[i] = f16_to_f32(v); break; }
      case DType::BF16: { uint16_t v; std::memcpy(&v, p, 2); out[i] = bf16_to_f32(v); break; }
      case DType::U8: out[i] = float(uint8_t(*p)); break;
    }
  }
  return out;
}

Tensor Tensor::to(const Device& dst) const {
  if (device() == dst) return *this;
  Tensor out = empty(shape_, dtype_, dst);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::reshape(const Shape& shape) const {
  check_shape(shape);
  if (forge::numel(shape) != numel())
    throw ShapeError("[reshape] cannot view " + describe() + " as " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > shape_[0])
    throw ShapeError("[slice_rows] rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " + describe());
  int64_t row = numel() / std::max<int64_t>(1, shape_[0]);
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.offset_ = offset_ + uint64_t(begin * row) * dtype_size(dtype_);
  if (device().is_webgpu() && t.byte_offset() % device().runtime().limits().storage_offset_alignment != 0)
    throw DeviceError("[slice_rows] byte offset " + std::to_string(t.offset_) + " of " + describe() +
                      " is not a multiple of the device's storage offset alignment");
  return t;
}

Tensor Tensor::joined_rows(const std::vector<Tensor>& parts) {
  if (parts.empty() || !parts.front().defined() || parts.front().rank() == 0) return Tensor();
  const Tensor& first = parts.front();
  Tensor out = first;
  for (size_t i = 1; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    const Tensor& prev = parts[i - 1];
    if (!p.defined() || p.storage_ != first.storage_ || p.dtype_ != first.dtype_ || p.rank() != first.rank() ||
        p.offset_ != prev.offset_ + prev.nbytes())
      return Tensor();
    for (int d = 1; d < first.rank(); ++d)
      if (p.shape_[size_t(d)] != first.shape_[size_t(d)]) return Tensor();
    out.shape_[0] += p.shape_[0];
  }
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape_ != shape_ || src.dtype_ != dtype_)
    throw ShapeError("[copy_from] " + src.describe() + " into " + describe());
  size_t n = nbytes();
  if (n == 0) return;
  bool src_cpu = src.device().is_cpu(), dst_cpu = device().is_cpu();
  if (src_cpu && dst_cpu) {
    std::memcpy(raw_data(), src.raw_data(), n);
  } else if (dst_cpu) {
    src.read_bytes(raw_data());
  } else if (src_cpu) {
    // Uploads move whole words: a tail of 1-3 bytes is merged with the bytes
    // that follow it in the buffer (read back first), so nothing else changes.
    const uint64_t at = byte_offset();
    if (at % 4) throw DeviceError("[copy_from] upload into " + describe() + " at an unaligned byte offset");
    size_t whole = n / 4 * 4;
    auto* bytes = static_cast<const std::byte*>(src.raw_data());
    if (whole) device().runtime().upload(buffer(), at, bytes, whole);
    if (whole < n) {
      std::byte word[4];
      device().runtime().download(buffer(), at + whole, word, 4);
      std::memcpy(word, bytes + whole, n - whole);
      device().runtime().upload(buffer(), at + whole, word, 4);
    }
  } else if (src.device() == device()) {
    if (n % 4 || byte_offset() % 4 || src.byte_offset() % 4)
      throw DeviceError("[copy_from] unaligned copy into " + describe());
    device().runtime().copy(src.buffer(), src.byte_offset(), buffer(), byte_offset(), n);
  } else {
    Tensor host = src.to(Device::cpu());
    copy_from(host);
  }
}

}  // namespace forge
