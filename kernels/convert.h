#pragma once
// Element-type conversion shared by the CPU and CUDA kernels.
#include <cstdint>
#include <limits>
#include <type_traits>

#include <wick/tensor/dtype.h>

namespace wick {

// A floating value truncated toward zero to the signed integer type I, with the result x86's
// cvttss2si/cvttsd2si give (and so PyTorch on x86 CPUs) where C++ leaves it undefined: NaN,
// infinities and values outside I's range become I's lowest value. CUDA's own conversion
// saturates instead; both backends use this one, so they agree. The range test is in
// double, which holds every float and I's bounds exactly (for int64, -2^63 - 1 rounds to
// -2^63, which is excluded but maps to the same lowest value).
template <class I, class F>
WICK_HD I truncate_to_int(F v) {
  static_assert(std::is_signed_v<I> && std::is_integral_v<I>);
  const double d = static_cast<double>(v);
  constexpr double lowest = static_cast<double>(std::numeric_limits<I>::lowest());
  return d > lowest - 1.0 && d < -lowest ? static_cast<I>(d) : std::numeric_limits<I>::lowest();
}

// Converts between element types through their compute types (16-bit floats via float,
// anything to bool as != 0).
template <class D, class S>
WICK_HD D convert(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    return static_cast<compute_t<S>>(s) != compute_t<S>(0);
  } else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
    return D(static_cast<float>(static_cast<compute_t<S>>(s)));
  } else if constexpr (std::is_unsigned_v<D> && std::is_floating_point_v<compute_t<S>>) {
    // Through int64, as PyTorch does: a negative float into uint8 is undefined behaviour, and
    // x86 wraps it while CUDA saturates to 0; int64 -> uint8 wraps on both.
    return static_cast<D>(truncate_to_int<int64_t>(static_cast<compute_t<S>>(s)));
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<compute_t<S>>) {
    return truncate_to_int<D>(static_cast<compute_t<S>>(s));
  } else {
    return static_cast<D>(static_cast<compute_t<S>>(s));
  }
}

}  // namespace wick
