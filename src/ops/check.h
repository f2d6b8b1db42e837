// Input validation shared by all ops. Each check throws with the op name and
// the operands' shapes in the message.
#pragma once
#include <initializer_list>
#include <string>

#include "forge/error.h"
#include "forge/ops/core.h"
#include "forge/tensor.h"

namespace forge::check {

// Every tensor defined and on the same device.
void same_device(const char* op, std::initializer_list<const Tensor*> ts);
// t has dtype `want`.
void dtype(const char* op, const char* name, const Tensor& t, DType want);
// t has rank within [lo, hi].
void rank(const char* op, const char* name, const Tensor& t, int lo, int hi);
// a and b have equal shapes.
void same_shape(const char* op, const Tensor& a, const Tensor& b);
// t (an input named `name`) f32 of x's shape on x's device: one that pairs
// with x element for element.
void f32_like(const char* op, const char* name, const Tensor& t, const Tensor& x);
// A row norm for x [.., K]: a weight (and bias, LayerNorm only) f32 [K] on x's device.
void row_norm(const char* op, const Tensor& x, const RowNorm& n);
// An op's output given by the caller (written IN PLACE): f32 of shape `want`
// on the device of `inputs`, its storage apart from every input's, and on
// WebGPU at the device's storage offset alignment.
void output(const char* op, const Tensor& out, const Shape& want, std::initializer_list<const Tensor*> inputs);
// "a f32[2, 3] on cpu, b f32[4] on cpu"
std::string operands(std::initializer_list<std::pair<const char*, const Tensor*>> ts);

}  // namespace forge::check
