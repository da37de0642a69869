#pragma once
// What the normalisation kernels (norm.cu: batch and group norm; layer_norm.cu: layer and
// RMS norm) share: the sum functors of their block reductions and the grid check.
#include <wick/tensor/error.h>

#include <cstdint>

namespace wick::cuda_kernels::norm_common {

struct Plus {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};

template <class A>
struct Pair {
  A a, b;
};

struct PairPlus {
  template <class A>
  __device__ Pair<A> operator()(Pair<A> x, Pair<A> y) const {
    return {x.a + y.a, x.b + y.b};
  }
};

inline void check_grid(const char* op, int64_t blocks) {
  WICK_CHECK(blocks < (int64_t{1} << 31), op, ": too many rows or channels (", blocks, ")");
}

}  // namespace wick::cuda_kernels::norm_common
