#pragma once
// Indexing ops. Index tensors are int64 (int32 accepted and converted); out-of-range
// indices throw wick::Error naming the op, the index and the size.
#include <wick/tensor/tensor.h>

namespace wick {

// Declared here for Tensors and in wick/autograd/ops.h for Variables from these rows
// (wick/tensor/mirrored_ops.h); indices and masks are Tensors in both. embedding picks the
// rows of `weight` [num, dim] by integer `indices` of any shape: [..., dim].
#define WICK_INDEXING_OPS(X, In, Out)                                                             \
  X(Out, index_select, (In x, int64_t dim, const Tensor& index)) /* index 1-d */                  \
  X(Out, gather, (In x, int64_t dim, const Tensor& index))       /* out has index's shape */      \
  X(Out, scatter, (In x, int64_t dim, const Tensor& index, In src))                               \
  X(Out, scatter, (In x, int64_t dim, const Tensor& index, const Scalar& value))                  \
  X(Out, scatter_add, (In x, int64_t dim, const Tensor& index, In src))                           \
  X(Out, index_add, (In x, int64_t dim, const Tensor& index, In src, double alpha = 1.0))         \
  X(Out, masked_fill, (In x, const Tensor& mask, const Scalar& value)) /* mask bool, broadcast */ \
  X(Out, masked_select, (In x, const Tensor& mask))                    /* 1-d result */           \
  X(Out, embedding, (In weight, const Tensor& indices))
#include <wick/tensor/generated/indexing_ops.inc>
Tensor nonzero(const Tensor& x);                                  // [n, x.dim()] int64
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);  // int64 result

// In-place forms (self is written; correct on views).
Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, double alpha = 1.0);

}  // namespace wick
