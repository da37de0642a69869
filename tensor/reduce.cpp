// PLACEHOLDER: stubs so the library links while the reduce entry points are written.
#include <wick/tensor/reduce.h>
#include <wick/tensor/reduce.h>

namespace wick {

Tensor sum(const Tensor&, const Dims&, bool) { detail::throw_error("sum: not implemented yet"); }
Tensor prod(const Tensor&, const Dims&, bool) { detail::throw_error("prod: not implemented yet"); }
Tensor mean(const Tensor&, const Dims&, bool) { detail::throw_error("mean: not implemented yet"); }
Tensor var(const Tensor&, const Dims&, bool, bool) { detail::throw_error("var: not implemented yet"); }
Tensor std(const Tensor&, const Dims&, bool, bool) { detail::throw_error("std: not implemented yet"); }
Tensor norm(const Tensor&, double, const Dims&, bool) { detail::throw_error("norm: not implemented yet"); }
Tensor logsumexp(const Tensor&, const Dims&, bool) { detail::throw_error("logsumexp: not implemented yet"); }
Tensor all(const Tensor&, const Dims&, bool) { detail::throw_error("all: not implemented yet"); }
Tensor any(const Tensor&, const Dims&, bool) { detail::throw_error("any: not implemented yet"); }
Tensor max(const Tensor&) { detail::throw_error("max: not implemented yet"); }
Tensor min(const Tensor&) { detail::throw_error("min: not implemented yet"); }
std::pair<Tensor, Tensor> max(const Tensor&, int64_t, bool) { detail::throw_error("max: not implemented yet"); }
std::pair<Tensor, Tensor> min(const Tensor&, int64_t, bool) { detail::throw_error("min: not implemented yet"); }
Tensor argmax(const Tensor&, std::optional<int64_t>, bool) { detail::throw_error("argmax: not implemented yet"); }
Tensor argmin(const Tensor&, std::optional<int64_t>, bool) { detail::throw_error("argmin: not implemented yet"); }
Tensor softmax(const Tensor&, int64_t) { detail::throw_error("softmax: not implemented yet"); }
Tensor log_softmax(const Tensor&, int64_t) { detail::throw_error("log_softmax: not implemented yet"); }
Tensor cumsum(const Tensor&, int64_t) { detail::throw_error("cumsum: not implemented yet"); }
Tensor Tensor::sum() const { return wick::sum(*this); }
Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const { return wick::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return wick::mean(*this); }
Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const { return wick::mean(*this, dims, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return wick::argmax(*this, dim, keepdim); }

}  // namespace wick
