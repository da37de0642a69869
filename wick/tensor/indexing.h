#pragma once
// Indexing ops. Index tensors are int64 (int32 accepted and converted); out-of-range
// indices throw wick::Error naming the op, the index and the size.
#include <wick/tensor/tensor.h>

namespace wick {

// Declared here for Tensors and in wick/autograd/ops.h for Variables from these rows
// (wick/tensor/mirrored_ops.h); indices and masks are Tensors in both. embedding picks the
// rows of `weight` [num, dim] by integer `indices` of any shape: [..., dim].
#define WICK_INDEXING_OPS(X, In, Out)                                                                                 \
  X(Out, index_select, (In x, int64_t dim, const Tensor& index),                                                      \
    Record<IndexSelectBackward>(x.shape(), dim, index)) /* index 1-d */                                               \
  X(Out, gather, (In x, int64_t dim, const Tensor& index),                                                            \
    Record<GatherBackward>(x.shape(), dim, index)) /* out has index's shape */                                        \
  X(Out, scatter, (In x, int64_t dim, const Tensor& index, In src), Record<ScatterBackward>(dim, index, src.shape())) \
  X(Out, scatter, (In x, int64_t dim, const Tensor& index, const Scalar& value),                                      \
    Record<ScatterBackward>(dim, index, std::nullopt))                                                                \
  X(Out, scatter_add, (In x, int64_t dim, const Tensor& index, In src),                                               \
    Record<AddAtIndexBackward>(false, dim, index, 1.0, src.shape()), Autocast)                                        \
  X(Out, index_add, (In x, int64_t dim, const Tensor& index, In src, double alpha = 1.0),                             \
    Record<AddAtIndexBackward>(true, dim, index, alpha, src.shape()))                                                 \
  X(Out, masked_fill, (In x, const Tensor& mask, const Scalar& value),                                                \
    Record<MaskedFillBackward>(mask)) /* mask bool, broadcast */                                                      \
  X(Out, masked_select, (In x, const Tensor& mask), Record<MaskedSelectBackward>(x.shape(), mask)) /* 1-d result */   \
  X(Out, embedding, (In weight, const Tensor& indices))
#include <wick/tensor/generated/indexing_ops.inc>
Tensor nonzero(const Tensor& x);                                  // [n, x.dim()] int64
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);  // int64 result

// In-place forms (self is written; correct on views).
Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, double alpha = 1.0);

}  // namespace wick
