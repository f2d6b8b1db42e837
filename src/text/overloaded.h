// std::visit over a variant with one lambda per alternative.
#pragma once

namespace forge::text {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
// Spelled out: clang 14 (the fuzz builds) does not deduce aggregate bases.
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace forge::text
