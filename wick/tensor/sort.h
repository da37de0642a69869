#pragma once
// Sorting and the selections built on it, as torch.sort / argsort / topk / kthvalue /
// median / nanmedian / mode / unique / unique_consecutive. One kernel (a stable segmented
// sort, see KernelTable::sort) serves them all; the rest is gather, cumsum, scatter_add and
// comparisons, so every op runs wherever the sort does. Indices are int64.
//
// The order: NaN is larger than every number (ascending: NaNs last; descending: first),
// -0.0 equals 0.0, and the sort is always stable (PyTorch's stable=true): equal elements
// keep their input order in both directions, which fixes every index among ties below.
// Negative dims count from the end; a 0-d tensor takes dim 0 or -1 as a 1-element vector.
#include <optional>
#include <utility>

#include <wick/tensor/tensor.h>

namespace wick {

// The selections along a dim, each giving (values, int64 indices), declared here for
// Tensors and in wick/autograd/sorting.h for Variables from these rows
// (wick/tensor/mirrored_ops.h):
// - sort: x sorted along dim; both contiguous with x's shape.
// - topk: the k largest (or smallest) along dim, in sorted order (PyTorch's sorted=true);
//   among equal values the lower index first, NaN counts as the largest. 0 <= k <=
//   size(dim). Not for bool (as PyTorch).
// - kthvalue: the k-th smallest (k from 1) along dim, NaN counting as the largest; among
//   equal values the one that comes k-th in input order. Not for bool.
// - median / nanmedian along dim, with its index: a row with a NaN gives NaN and the index
//   of its first NaN; otherwise the lower median, and among equal values the one at its
//   sorted position in input order (as PyTorch's CPU kernel). nanmedian takes the lower
//   median of the row's numbers (an all-NaN row gives NaN and its first index).
// - mode: the most frequent value along dim (ties: the smallest value) and the index of its
//   last occurrence (PyTorch's CPU kernel takes the last of the value's run in sorted
//   order). Each NaN counts on its own (NaN != NaN), as PyTorch.
#define WICK_SORT_OPS(X, In, Out)                                                          \
  X(WithIndices<Out>, sort, (In x, int64_t dim = -1, bool descending = false),             \
    selected(x, dim, argsort(x.data(), dim, descending)))                                  \
  X(WithIndices<Out>, topk, (In x, int64_t k, int64_t dim = -1, bool largest = true),      \
    selected(x, dim, topk(x.data(), k, dim, largest).second))                              \
  X(WithIndices<Out>, kthvalue, (In x, int64_t k, int64_t dim = -1, bool keepdim = false), \
    selected(x, dim, kthvalue(x.data(), k, dim, keepdim).second, keepdim))                 \
  X(WithIndices<Out>, median, (In x, int64_t dim, bool keepdim = false),                   \
    selected(x, dim, median(x.data(), dim, keepdim).second, keepdim))                      \
  X(WithIndices<Out>, nanmedian, (In x, int64_t dim, bool keepdim = false),                \
    selected(x, dim, nanmedian(x.data(), dim, keepdim).second, keepdim))                   \
  X(WithIndices<Out>, mode, (In x, int64_t dim = -1, bool keepdim = false),                \
    selected(x, dim, mode(x.data(), dim, keepdim).second, keepdim))
#include <wick/tensor/generated/sort_ops.inc>
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);

// The lower median ((n - 1) / 2-th smallest) of all elements; NaN if any element is NaN.
// nanmedian ignores NaN (NaN only when every element is). Not for bool or empty tensors.
// Declared here for Tensors and in wick/autograd/ops.h for Variables from these rows
// (wick/tensor/mirrored_ops.h).
#define WICK_MEDIAN_OPS(X, In, Out)                                                                             \
  X(Out, median, (In x), Record<ExtremumBackward>("MedianBackward", x.data(), out.data(), Dims{}, false, true)) \
  X(Out, nanmedian, (In x), Record<ExtremumBackward>("NanmedianBackward", x.data(), out.data(), Dims{}, false, true))
#include <wick/tensor/generated/median_ops.inc>
// torch.unique: the distinct values in ascending order (each NaN distinct, as PyTorch),
// with the inverse (for each input element, the index of its value in `values`; x's shape)
// and the counts when asked (undefined otherwise). Without a dim x is flattened; with one,
// the distinct slices along dim, ordered lexicographically, the inverse of size(dim).
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& x, bool return_inverse = false, bool return_counts = false,
                    std::optional<int64_t> dim = std::nullopt);
// The same for runs of equal consecutive elements (or slices), without sorting.
UniqueResult unique_consecutive(const Tensor& x, bool return_inverse = false, bool return_counts = false,
                                std::optional<int64_t> dim = std::nullopt);

}  // namespace wick
