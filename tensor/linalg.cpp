// PLACEHOLDER: stubs so the library links while the linalg entry points are written.
#include <wick/tensor/linalg.h>
#include <wick/tensor/linalg.h>

namespace wick {

Tensor matmul(const Tensor&, const Tensor&) { detail::throw_error("matmul: not implemented yet"); }
Tensor mm(const Tensor&, const Tensor&) { detail::throw_error("mm: not implemented yet"); }
Tensor bmm(const Tensor&, const Tensor&) { detail::throw_error("bmm: not implemented yet"); }
Tensor addmm(const Tensor&, const Tensor&, const Tensor&, double, double) { detail::throw_error("addmm: not implemented yet"); }
Tensor outer(const Tensor&, const Tensor&) { detail::throw_error("outer: not implemented yet"); }
Tensor dot(const Tensor&, const Tensor&) { detail::throw_error("dot: not implemented yet"); }
Tensor Tensor::matmul(const Tensor& o) const { return wick::matmul(*this, o); }

}  // namespace wick
