#pragma once
// A contiguous tensor seen as [outer, n, inner] around one dim: how the softmax and cumsum
// kernels (CPU and CUDA) walk "along a dim". A 0-d tensor counts as [1, 1, 1].
#include <cstdint>

#include <wick/tensor/tensor.h>

namespace wick {

struct AroundDim {
  int64_t outer = 1, n = 1, inner = 1;
};

inline AroundDim around_dim(const Tensor& t, int64_t dim) {
  AroundDim a;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) a.outer *= t.shape()[d];
    else if (d == dim) a.n = t.shape()[d];
    else a.inner *= t.shape()[d];
  }
  return a;
}

}  // namespace wick
