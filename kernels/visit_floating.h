#pragma once
// Dispatch of kernels defined for floating dtypes only, and the dtype they keep statistics
// in; shared by the CPU and CUDA kernel files.
#include <type_traits>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/dtype.h>

namespace wick {

// Calls f.template operator()<T>() for a floating dtype t; throws "op: no <device> kernel
// for <dtype>" for any other.
template <class F>
void visit_floating(const char* op, Device d, DType t, F&& f) {
  visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_floating_point_v<compute_t<T>>) f.template operator()<T>();
    else throw_unsupported_dtype(op, d, t);
  });
}

// The dtype normalisation statistics and log-sum-exps are kept in: double for float64,
// float otherwise (16-bit inputs keep float statistics, as PyTorch does).
template <class T>
using stats_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

}  // namespace wick
