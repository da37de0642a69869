#pragma once
// The order the sort kernels (CPU and CUDA) put keys in, as PyTorch's stable sort does:
// NaN is larger than every number (last when ascending, first when descending), NaNs are
// equal to each other, and -0.0 equals 0.0. Keys are compared in their compute type (16-bit
// floats as float). Equal keys are left to the caller, which orders them by position.
#include <type_traits>

#include <wick/tensor/half.h>

namespace wick {

// Whether key a goes strictly before key b.
template <class C>
WICK_HD bool key_before(C a, C b, bool descending) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool a_nan = a != a, b_nan = b != b;
    if (a_nan || b_nan) return descending ? a_nan && !b_nan : b_nan && !a_nan;
  }
  return descending ? b < a : a < b;
}

}  // namespace wick
