// char_class(): an ASCII table for the common case, binary search over the
// generated runs for the rest.
#include <algorithm>
#include <array>

#include "text/unicode_tables.h"

namespace forge::text {

namespace {

std::array<CharClass, 128> make_ascii_table() {
  std::array<CharClass, 128> t{};
  for (std::uint32_t c = 0; c < 128; ++c) {
    const ClassRun* end = kClassRuns + kClassRunCount;
    auto it = std::upper_bound(kClassRuns, end, c,
                               [](std::uint32_t v, const ClassRun& r) { return v < r.start; });
    t[c] = (it - 1)->cls;
  }
  return t;
}

}  // namespace

CharClass char_class(std::uint32_t cp) {
  static const std::array<CharClass, 128> ascii = make_ascii_table();
  if (cp < 128) return ascii[cp];
  if (cp > 0x10FFFF) return CharClass::kOther;
  const ClassRun* end = kClassRuns + kClassRunCount;
  auto it = std::upper_bound(kClassRuns, end, cp,
                             [](std::uint32_t v, const ClassRun& r) { return v < r.start; });
  return (it - 1)->cls;
}

}  // namespace forge::text
