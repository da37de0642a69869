// PLACEHOLDER: stubs so the library links while the indexing entry points are written.
#include <wick/tensor/indexing.h>
#include <wick/tensor/indexing.h>

namespace wick {

Tensor index_select(const Tensor&, int64_t, const Tensor&) { detail::throw_error("index_select: not implemented yet"); }
Tensor gather(const Tensor&, int64_t, const Tensor&) { detail::throw_error("gather: not implemented yet"); }
Tensor scatter(const Tensor&, int64_t, const Tensor&, const Tensor&) { detail::throw_error("scatter: not implemented yet"); }
Tensor scatter(const Tensor&, int64_t, const Tensor&, const Scalar&) { detail::throw_error("scatter: not implemented yet"); }
Tensor scatter_add(const Tensor&, int64_t, const Tensor&, const Tensor&) { detail::throw_error("scatter_add: not implemented yet"); }
Tensor index_add(const Tensor&, int64_t, const Tensor&, const Tensor&, double) { detail::throw_error("index_add: not implemented yet"); }
Tensor masked_fill(const Tensor&, const Tensor&, const Scalar&) { detail::throw_error("masked_fill: not implemented yet"); }
Tensor masked_select(const Tensor&, const Tensor&) { detail::throw_error("masked_select: not implemented yet"); }
Tensor nonzero(const Tensor&) { detail::throw_error("nonzero: not implemented yet"); }
Tensor one_hot(const Tensor&, int64_t) { detail::throw_error("one_hot: not implemented yet"); }
Tensor embedding(const Tensor&, const Tensor&) { detail::throw_error("embedding: not implemented yet"); }
Tensor& scatter_(Tensor&, int64_t, const Tensor&, const Tensor&) { detail::throw_error("scatter_: not implemented yet"); }
Tensor& scatter_add_(Tensor&, int64_t, const Tensor&, const Tensor&) { detail::throw_error("scatter_add_: not implemented yet"); }
Tensor& index_add_(Tensor&, int64_t, const Tensor&, const Tensor&, double) { detail::throw_error("index_add_: not implemented yet"); }
Tensor& Tensor::masked_fill_(const Tensor&, const Scalar&) { detail::throw_error("masked_fill_: not implemented yet"); }

}  // namespace wick
