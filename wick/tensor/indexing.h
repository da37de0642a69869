#pragma once
// Indexing ops. Index tensors are int64 (int32 accepted and converted); out-of-range
// indices throw wick::Error naming the op, the index and the size.
#include <wick/tensor/tensor.h>

namespace wick {

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);           // index 1-d
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);                 // out has index's shape
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha = 1.0);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);     // mask bool, broadcast
Tensor masked_select(const Tensor& x, const Tensor& mask);                        // 1-d result
Tensor nonzero(const Tensor& x);                                                  // [n, x.dim()] int64
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);                  // int64 result
// Rows of `weight` [num, dim] picked by integer `indices` of any shape: [..., dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);

// In-place forms (self is written; correct on views).
Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, double alpha = 1.0);

}  // namespace wick
