#include "ops/check.h"

#include "gpu/runtime.h"

namespace forge::check {

std::string operands(std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  std::string s;
  for (auto& [name, t] : ts) {
    if (!s.empty()) s += ", ";
    s += std::string(name) + " " + t->describe();
  }
  return s;
}

void same_device(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined()) throw Error(std::string("[") + op + "] undefined tensor argument");
    if (!first) first = t;
    else if (t->device() != first->device())
      throw DeviceError(std::string("[") + op + "] operands on different devices: " + first->describe() + " and " +
                        t->describe());
  }
}

void dtype(const char* op, const char* name, const Tensor& t, DType want) {
  if (t.dtype() != want)
    throw DTypeError(std::string("[") + op + "] " + name + " must be " + dtype_name(want) + ", got " + t.describe());
}

void rank(const char* op, const char* name, const Tensor& t, int lo, int hi) {
  if (t.rank() < lo || t.rank() > hi)
    throw ShapeError(std::string("[") + op + "] " + name + " must have rank " + std::to_string(lo) +
                     (hi != lo ? ".." + std::to_string(hi) : std::string()) + ", got " + t.describe());
}

void same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw ShapeError(std::string("[") + op + "] shapes differ: a " + shape_str(a.shape()) + ", b " +
                     shape_str(b.shape()));
}

void f32_like(const char* op, const char* name, const Tensor& t, const Tensor& x) {
  same_device(op, {&x, &t});
  dtype(op, name, t, DType::F32);
  if (t.shape() != x.shape())
    throw ShapeError(std::string("[") + op + "] shapes differ: " + operands({{"x", &x}, {name, &t}}));
}

void row_norm(const char* op, const Tensor& x, const RowNorm& n) {
  if (!n.weight || !n.weight->defined()) throw ValueError(std::string("[") + op + "] the row norm has no weight");
  same_device(op, {&x, n.weight});
  dtype(op, "norm weight", *n.weight, DType::F32);
  if (n.weight->rank() != 1 || n.weight->dim(0) != x.dim(-1))
    throw ShapeError(std::string("[") + op + "] norm weight " + n.weight->describe() + " must be [" +
                     std::to_string(x.dim(-1)) + "] for x " + x.describe());
  if (!n.bias) return;
  if (!n.layer) throw ValueError(std::string("[") + op + "] a row norm bias needs the LayerNorm form (layer)");
  same_device(op, {&x, n.bias});
  dtype(op, "norm bias", *n.bias, DType::F32);
  if (n.bias->rank() != 1 || n.bias->dim(0) != x.dim(-1))
    throw ShapeError(std::string("[") + op + "] norm bias " + n.bias->describe() + " must be [" +
                     std::to_string(x.dim(-1)) + "] for x " + x.describe());
}

void output(const char* op, const Tensor& out, const Shape& want, std::initializer_list<const Tensor*> inputs) {
  const std::string at = std::string("[") + op + "] out " + out.describe();
  for (const Tensor* t : inputs) {
    if (!t || !t->defined()) continue;
    same_device(op, {t, &out});
    if (t->storage_id() == out.storage_id()) throw ValueError(at + " shares its storage with an input");
  }
  dtype(op, "out", out, DType::F32);
  if (out.shape() != want) throw ShapeError(at + " must be " + shape_str(want));
  if (out.device().is_webgpu() && out.byte_offset() % out.device().runtime().limits().storage_offset_alignment != 0)
    throw DeviceError(at + " starts at byte " + std::to_string(out.byte_offset()) +
                      ", not a multiple of the device's storage offset alignment");
}

}  // namespace forge::check
