// Floating-point std::to_chars, which Emscripten 3.1.6's libc++ (13) lacks:
// the shortest scientific form that reads back as the same double, as the
// chat templates' float printing asks for. Included before
// src/text/jinja/value.cpp only (web/wasm.cmake).
#pragma once
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(_LIBCPP_VERSION) && _LIBCPP_VERSION < 14000
namespace std {
inline to_chars_result to_chars(char* first, char* last, double v, chars_format fmt) {
  char buf[64];
  int n = 0;
  for (int precision = 0; precision <= 17; ++precision) {
    n = std::snprintf(buf, sizeof buf, fmt == chars_format::scientific ? "%.*e" : "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  if (n > last - first) return {last, errc::value_too_large};
  std::memcpy(first, buf, size_t(n));
  return {first + n, errc()};
}
}  // namespace std
#endif
