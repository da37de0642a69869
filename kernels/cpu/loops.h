#pragma once
// The strided loop every CPU elementwise kernel runs on: the iteration space (see
// wick/tensor/strided_layout.h) is cut into rows along the innermost merged dim, and each row is
// handed to `row(base, n, inner_strides)` where base[k] is operand k's element offset at the
// row's start. Row functions check inner_strides for the all-contiguous case and run a plain
// pointer loop the compiler vectorises. When an operand is transposed relative to the output,
// rows are cut into square tiles (same contract, shorter rows).
#include <wick/tensor/strided_layout.h>

#include "kernels/convert.h"
#include "kernels/cpu/parallel.h"

namespace wick::cpu {

// Tiles walked when an operand runs across the output's rows: kTileCols output columns (a
// cache line of floats, so each line of the transposed operand is used whole) by kTileRows
// rows. Measured on 4096 x 4096 float32 (a + b.t()) against a contiguous add: 3.2x with
// these on a quiet machine (128 x 32 and 256 x 32: 4.6x; 64 x 16: 3.4x; 64 x 64: 6.5x, as
// power-of-two strides alias in the cache; untiled: 12x). The rest of the gap is the
// per-element strided loads: an in-register transpose of the tile would close it.
inline constexpr int64_t kTileRows = 256;
inline constexpr int64_t kTileCols = 16;

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
  // An operand that is contiguous along the second-innermost dim but not the innermost one
  // (a transposed input) would touch a new cache line per element on every row; walking
  // tiles keeps the lines it touches in cache until their other elements are used.
  bool transposed = false;
  if (L.ndim >= 2)
    for (int k = 0; k < N; ++k)
      if (L.strides[k][L.ndim - 2] == 1 && st[k] != 1 && st[k] != 0) transposed = true;
  if (transposed && inner >= 2 * kTileCols) {
    const int64_t outer = L.sizes[L.ndim - 2];
    const int64_t tiles_r = (outer + kTileRows - 1) / kTileRows, tiles_c = (inner + kTileCols - 1) / kTileCols;
    const int64_t tiles = L.numel / (outer * inner) * tiles_r * tiles_c;
    parallel_for(0, tiles, std::max<int64_t>(1, grain / (kTileRows * kTileCols)), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t batch = t / (tiles_r * tiles_c), tr = (t / tiles_c) % tiles_r, tc = t % tiles_c;
        const int64_t r0 = tr * kTileRows, c0 = tc * kTileCols;
        const int64_t rows = std::min(kTileRows, outer - r0), n = std::min(kTileCols, inner - c0);
        int64_t off[N];
        L.offsets((batch * outer + r0) * inner + c0, off);
        for (int64_t r = 0; r < rows; ++r) {
          row(off, n, st);
          for (int k = 0; k < N; ++k) off[k] += L.strides[k][L.ndim - 2];
        }
      }
    });
    return;
  }
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
