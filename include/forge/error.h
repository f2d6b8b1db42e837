// forge's exceptions. Messages start with the op or component in brackets and
// name the shapes or values involved: "[matmul] inner dims differ: a [2, 3], b [4, 5]".
#pragma once
#include <stdexcept>
#include <string>

namespace forge {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Wrong shapes or ranks for an op.
class ShapeError : public Error {
 public:
  using Error::Error;
};
// Wrong element type for an op.
class DTypeError : public Error {
 public:
  using Error::Error;
};
// Operands on different devices, or a device that cannot do something.
class DeviceError : public Error {
 public:
  using Error::Error;
};
// WebGPU failures: validation, out of memory, device lost.
class GpuError : public Error {
 public:
  using Error::Error;
};
// Files: missing, unreadable, malformed.
class IoError : public Error {
 public:
  using Error::Error;
};
// Values out of range: token ids, positions, options.
class ValueError : public Error {
 public:
  using Error::Error;
};

}  // namespace forge
