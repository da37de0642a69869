#pragma once
// The strided loop every CPU elementwise kernel runs on: the iteration space (see
// tensor/strided_layout.h) is cut into rows along the innermost merged dim, and each row is
// handed to `row(base, n, inner_strides)` where base[k] is operand k's element offset at the
// row's start. Row functions check inner_strides for the all-contiguous case and run a plain
// pointer loop the compiler vectorises.
#include <wick/tensor/strided_layout.h>

#include "kernels/convert.h"
#include "kernels/cpu/parallel.h"

namespace wick::cpu {

template <int N, class Row>
void for_each_row(const StridedLayout<N>& L, Row&& row, int64_t grain = kElementwiseGrain) {
  if (L.numel == 0) return;
  int64_t st[N];
  if (L.ndim == 0) {
    int64_t off[N] = {};
    for (int k = 0; k < N; ++k) st[k] = 0;
    row(off, int64_t{1}, st);
    return;
  }
  const int64_t inner = L.sizes[L.ndim - 1];
  for (int k = 0; k < N; ++k) st[k] = L.strides[k][L.ndim - 1];
  parallel_for(0, L.numel, grain, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
    while (i < end) {
      int64_t r = i / inner, c = i - r * inner;
      int64_t n = std::min(inner - c, end - i);
      int64_t off[N];
      L.offsets(r * inner, off);
      for (int k = 0; k < N; ++k) off[k] += c * st[k];
      row(off, n, st);
      i += n;
    }
  });
}

}  // namespace wick::cpu
