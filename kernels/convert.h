#pragma once
// Element-type conversion shared by the CPU and CUDA kernels.
#include <cstdint>
#include <type_traits>

#include <wick/tensor/dtype.h>

namespace wick {

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
    return static_cast<D>(static_cast<int64_t>(static_cast<compute_t<S>>(s)));
  } else {
    return static_cast<D>(static_cast<compute_t<S>>(s));
  }
}

}  // namespace wick
