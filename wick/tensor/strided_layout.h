#pragma once
// The iteration space of an elementwise kernel over N operands (operand 0 is the output),
// all already expanded to one shape. Dims of size 1 are dropped and neighbouring dims that
// are contiguous with each other in every operand are merged, so a contiguous tensor becomes
// one dim and a transposed one two. Plain data: CPU loops read it and CUDA kernels take it
// by value.
#include <algorithm>
#include <array>
#include <cstdint>

#include <wick/tensor/tensor.h>

namespace wick {

inline constexpr int kMaxLayoutDims = 12;

template <int N>
struct StridedLayout {
  int ndim = 0;                                  // after merging; 0 means a single element
  int64_t numel = 0;
  int64_t sizes[kMaxLayoutDims] = {};            // innermost dim last
  int64_t strides[N][kMaxLayoutDims] = {};       // in elements

  // Offsets (in elements) of linear index `i` for every operand.
  WICK_HD void offsets(int64_t i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t idx = i % sizes[d];
      i /= sizes[d];
      for (int k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
  }
  // Whether every operand is contiguous over the whole space (one merged dim of unit stride).
  bool all_contiguous() const {
    if (ndim == 0) return true;
    if (ndim != 1) return false;
    for (int k = 0; k < N; ++k)
      if (strides[k][0] != 1) return false;
    return true;
  }
};

// Builds the layout for operands that all have `ops[0]`'s shape. Dims are ordered by the
// output's strides (largest first), so an output with permuted strides is still walked in
// memory order. Throws naming `op` if more than kMaxLayoutDims dims remain after merging.
template <int N>
StridedLayout<N> make_strided_layout(const char* op, const std::array<const Tensor*, N>& ops) {
  const Tensor& out = *ops[0];
  StridedLayout<N> L;
  L.numel = out.numel();
  int64_t nd = out.dim();
  // Order dims by the output's stride, descending (stable, so ties keep their order).
  std::array<int64_t, 64> order{};
  WICK_CHECK(nd <= 64, op, ": tensors with more than 64 dims are not supported");
  int m = 0;
  for (int64_t d = 0; d < nd; ++d)
    if (out.shape()[d] != 1) order[m++] = d;
  // Insertion sort: stable, and without the buffer std::stable_sort allocates (this runs for
  // every elementwise op; m is a handful).
  for (int i = 1; i < m; ++i)
    for (int j = i; j > 0 && out.strides()[order[j - 1]] < out.strides()[order[j]]; --j) std::swap(order[j - 1], order[j]);
  int64_t sizes[64];
  int64_t strides[N][64];
  int k = 0;
  for (int j = 0; j < m; ++j) {
    int64_t d = order[j];
    int64_t sz = out.shape()[d];
    if (k > 0) {
      bool mergeable = true;
      for (int o = 0; o < N; ++o)
        if (strides[o][k - 1] != ops[o]->strides()[d] * sz) mergeable = false;
      if (mergeable) {
        sizes[k - 1] *= sz;
        for (int o = 0; o < N; ++o) strides[o][k - 1] = ops[o]->strides()[d];
        continue;
      }
    }
    sizes[k] = sz;
    for (int o = 0; o < N; ++o) strides[o][k] = ops[o]->strides()[d];
    ++k;
  }
  WICK_CHECK(k <= kMaxLayoutDims, op, ": the operands of shape ", shape_str(out.shape()), " need ", k,
             " dims after merging, more than the ", kMaxLayoutDims, " supported");
  L.ndim = k;
  for (int d = 0; d < k; ++d) {
    L.sizes[d] = sizes[d];
    for (int o = 0; o < N; ++o) L.strides[o][d] = strides[o][d];
  }
  return L;
}

}  // namespace wick
