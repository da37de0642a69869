// PLACEHOLDER: stubs so the library links while the elementwise entry points are written.
#include <wick/tensor/elementwise.h>
#include <wick/tensor/elementwise.h>

namespace wick {

Tensor add(const Tensor&, const Tensor&) { detail::throw_error("add: not implemented yet"); }
Tensor sub(const Tensor&, const Tensor&) { detail::throw_error("sub: not implemented yet"); }
Tensor mul(const Tensor&, const Tensor&) { detail::throw_error("mul: not implemented yet"); }
Tensor div(const Tensor&, const Tensor&) { detail::throw_error("div: not implemented yet"); }
Tensor pow(const Tensor&, const Tensor&) { detail::throw_error("pow: not implemented yet"); }
Tensor minimum(const Tensor&, const Tensor&) { detail::throw_error("minimum: not implemented yet"); }
Tensor maximum(const Tensor&, const Tensor&) { detail::throw_error("maximum: not implemented yet"); }
Tensor remainder(const Tensor&, const Tensor&) { detail::throw_error("remainder: not implemented yet"); }
Tensor floor_divide(const Tensor&, const Tensor&) { detail::throw_error("floor_divide: not implemented yet"); }
Tensor atan2(const Tensor&, const Tensor&) { detail::throw_error("atan2: not implemented yet"); }
Tensor add(const Tensor&, const Scalar&) { detail::throw_error("add: not implemented yet"); }
Tensor sub(const Tensor&, const Scalar&) { detail::throw_error("sub: not implemented yet"); }
Tensor mul(const Tensor&, const Scalar&) { detail::throw_error("mul: not implemented yet"); }
Tensor div(const Tensor&, const Scalar&) { detail::throw_error("div: not implemented yet"); }
Tensor pow(const Tensor&, const Scalar&) { detail::throw_error("pow: not implemented yet"); }
Tensor pow(const Scalar&, const Tensor&) { detail::throw_error("pow: not implemented yet"); }
Tensor minimum(const Tensor&, const Scalar&) { detail::throw_error("minimum: not implemented yet"); }
Tensor maximum(const Tensor&, const Scalar&) { detail::throw_error("maximum: not implemented yet"); }
Tensor eq(const Tensor&, const Tensor&) { detail::throw_error("eq: not implemented yet"); }
Tensor ne(const Tensor&, const Tensor&) { detail::throw_error("ne: not implemented yet"); }
Tensor lt(const Tensor&, const Tensor&) { detail::throw_error("lt: not implemented yet"); }
Tensor le(const Tensor&, const Tensor&) { detail::throw_error("le: not implemented yet"); }
Tensor gt(const Tensor&, const Tensor&) { detail::throw_error("gt: not implemented yet"); }
Tensor ge(const Tensor&, const Tensor&) { detail::throw_error("ge: not implemented yet"); }
Tensor eq(const Tensor&, const Scalar&) { detail::throw_error("eq: not implemented yet"); }
Tensor ne(const Tensor&, const Scalar&) { detail::throw_error("ne: not implemented yet"); }
Tensor lt(const Tensor&, const Scalar&) { detail::throw_error("lt: not implemented yet"); }
Tensor le(const Tensor&, const Scalar&) { detail::throw_error("le: not implemented yet"); }
Tensor gt(const Tensor&, const Scalar&) { detail::throw_error("gt: not implemented yet"); }
Tensor ge(const Tensor&, const Scalar&) { detail::throw_error("ge: not implemented yet"); }
Tensor logical_and(const Tensor&, const Tensor&) { detail::throw_error("logical_and: not implemented yet"); }
Tensor logical_or(const Tensor&, const Tensor&) { detail::throw_error("logical_or: not implemented yet"); }
Tensor logical_not(const Tensor&) { detail::throw_error("logical_not: not implemented yet"); }
Tensor where(const Tensor&, const Tensor&, const Tensor&) { detail::throw_error("where: not implemented yet"); }
Tensor where(const Tensor&, const Tensor&, const Scalar&) { detail::throw_error("where: not implemented yet"); }
Tensor where(const Tensor&, const Scalar&, const Tensor&) { detail::throw_error("where: not implemented yet"); }
Tensor neg(const Tensor&) { detail::throw_error("neg: not implemented yet"); }
Tensor abs(const Tensor&) { detail::throw_error("abs: not implemented yet"); }
Tensor sign(const Tensor&) { detail::throw_error("sign: not implemented yet"); }
Tensor floor(const Tensor&) { detail::throw_error("floor: not implemented yet"); }
Tensor ceil(const Tensor&) { detail::throw_error("ceil: not implemented yet"); }
Tensor round(const Tensor&) { detail::throw_error("round: not implemented yet"); }
Tensor relu(const Tensor&) { detail::throw_error("relu: not implemented yet"); }
Tensor square(const Tensor&) { detail::throw_error("square: not implemented yet"); }
Tensor leaky_relu(const Tensor&, double) { detail::throw_error("leaky_relu: not implemented yet"); }
Tensor clamp(const Tensor&, std::optional<double>, std::optional<double>) { detail::throw_error("clamp: not implemented yet"); }
Tensor exp(const Tensor&) { detail::throw_error("exp: not implemented yet"); }
Tensor log(const Tensor&) { detail::throw_error("log: not implemented yet"); }
Tensor log1p(const Tensor&) { detail::throw_error("log1p: not implemented yet"); }
Tensor expm1(const Tensor&) { detail::throw_error("expm1: not implemented yet"); }
Tensor sqrt(const Tensor&) { detail::throw_error("sqrt: not implemented yet"); }
Tensor rsqrt(const Tensor&) { detail::throw_error("rsqrt: not implemented yet"); }
Tensor reciprocal(const Tensor&) { detail::throw_error("reciprocal: not implemented yet"); }
Tensor sin(const Tensor&) { detail::throw_error("sin: not implemented yet"); }
Tensor cos(const Tensor&) { detail::throw_error("cos: not implemented yet"); }
Tensor tanh(const Tensor&) { detail::throw_error("tanh: not implemented yet"); }
Tensor sigmoid(const Tensor&) { detail::throw_error("sigmoid: not implemented yet"); }
Tensor erf(const Tensor&) { detail::throw_error("erf: not implemented yet"); }
Tensor gelu(const Tensor&, GeluApproximation) { detail::throw_error("gelu: not implemented yet"); }
Tensor silu(const Tensor&) { detail::throw_error("silu: not implemented yet"); }
Tensor softplus(const Tensor&, double, double) { detail::throw_error("softplus: not implemented yet"); }
Tensor unary_grad(UnaryOp, const Tensor&) { detail::throw_error("unary_grad: not implemented yet"); }
DType result_type(const Tensor&, const Tensor&) { detail::throw_error("result_type: not implemented yet"); }
DType result_type(const Tensor&, const Scalar&) { detail::throw_error("result_type: not implemented yet"); }
Tensor& Tensor::add_(const Tensor&) { detail::throw_error("add_: not implemented yet"); }
Tensor& Tensor::add_(const Scalar&) { detail::throw_error("add_: not implemented yet"); }
Tensor& Tensor::sub_(const Tensor&) { detail::throw_error("sub_: not implemented yet"); }
Tensor& Tensor::sub_(const Scalar&) { detail::throw_error("sub_: not implemented yet"); }
Tensor& Tensor::mul_(const Tensor&) { detail::throw_error("mul_: not implemented yet"); }
Tensor& Tensor::mul_(const Scalar&) { detail::throw_error("mul_: not implemented yet"); }
Tensor& Tensor::div_(const Tensor&) { detail::throw_error("div_: not implemented yet"); }
Tensor& Tensor::div_(const Scalar&) { detail::throw_error("div_: not implemented yet"); }
Tensor& Tensor::clamp_(std::optional<double>, std::optional<double>) { detail::throw_error("clamp_: not implemented yet"); }
Tensor Tensor::abs() const { return wick::abs(*this); }
Tensor Tensor::exp() const { return wick::exp(*this); }
Tensor Tensor::log() const { return wick::log(*this); }
Tensor Tensor::sqrt() const { return wick::sqrt(*this); }
Tensor Tensor::neg() const { return wick::neg(*this); }

}  // namespace wick
