#pragma once
// Elementwise ops with broadcasting on any strides, PyTorch's type promotion, scalar
// overloads and C++ operators. In-place variants are Tensor methods (add_, mul_...).
#include <optional>

#include <wick/tensor/op_kinds.h>
#include <wick/tensor/tensor.h>

namespace wick {

// The binary ops of the table in wick/tensor/op_kinds.h (WICK_BINARY_OPS): `Tensor
// add(const Tensor& a, const Tensor& b)` for every row, and `Tensor add(const Tensor& a,
// const Scalar& b)` for its Both and Compare rows, declared in the file included below,
// which tools/op_list.py writes from the table.
// Arithmetic: result dtype = promote(a, b) with PyTorch's rules for 0-d tensors and scalars
// (a scalar never widens a tensor of the same category: int32 + 2 -> int32, float16 + 2.5 ->
// float16; int + 2.5 -> float32); div and atan2 of integers give float32; minimum and maximum
// propagate NaN; remainder takes the divisor's sign (Python's %), fmod the dividend's (C's).
// Comparisons (eq, ne, lt, le, gt, ge) give bool; the logical ops (logical_and, logical_or;
// logical_not is a unary op) treat nonzero as true and give bool. The bitwise ops
// (bitwise_and, bitwise_or, bitwise_xor; bitwise_not is unary) take integer and bool tensors,
// floats are refused.
#include <wick/tensor/generated/binary_ops.inc>

// pow with a number: an integer tensor refuses a negative integer exponent (as PyTorch).
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);

// Shifts of integer tensors (bool and floats are refused), as PyTorch: a left shift by a
// negative amount or by the bit width or more gives 0; a right shift by such an amount
// gives 0, or -1 for negative values (the sign fills). The in-place forms write into self.
// (Tensor-Tensor and Tensor-number forms: from the table, above.)
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b);
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b);
Tensor& bitwise_left_shift_(Tensor& self, const Tensor& other);
Tensor& bitwise_left_shift_(Tensor& self, const Scalar& other);
Tensor& bitwise_right_shift_(Tensor& self, const Tensor& other);
Tensor& bitwise_right_shift_(Tensor& self, const Scalar& other);

// Classification of floating values, as bool (integer and bool tensors: never NaN or
// infinite).
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);

// The elementwise ops with more arguments, declared here for Tensors and in
// wick/autograd/ops.h for Variables from these rows (wick/tensor/mirrored_ops.h):
// - where: cond ? a : b, all three broadcast together (a or b may be a number: a 0-d
//   operand of the dtype PyTorch's promotion gives the pair); result dtype = promote(a, b);
//   cond is a bool Tensor in both forms (not differentiable);
// - clamp: min(max(x, lo), hi); an integer tensor with a floating bound gives a floating
//   result;
// - leaky_relu, gelu, softplus: the unary table's Custom rows (op_kinds.h).
enum class GeluApproximation { None, Tanh };
#define WICK_ELEMENTWISE_MORE_OPS(X, In, Out)                                                                         \
  X(Out, where, (const Tensor& cond, In a, In b), Record<WhereBackward>(cond, a.shape(), b.shape()))                  \
  X(Out, where, (const Tensor& cond, In a, const Scalar& b),                                                          \
    where(cond, a, Variable(scalar_tensor(b, Options(result_type(a.data(), b), a.device())))))                        \
  X(Out, where, (const Tensor& cond, const Scalar& a, In b),                                                          \
    where(cond, Variable(scalar_tensor(a, Options(result_type(b.data(), a), b.device()))), b))                        \
  X(Out, clamp, (In x, std::optional<Scalar> lo, std::optional<Scalar> hi),                                           \
    Record<MaskedLinearBackward>(MaskedLinearBackward::Kind::Clamp, x.data(), lo ? lo->to_double() : 0.0,             \
                                 hi ? hi->to_double() : 0.0, lo.has_value(), hi.has_value()))                         \
  X(Out, leaky_relu, (In x, double negative_slope = 0.01),                                                            \
    Record<MaskedLinearBackward>(MaskedLinearBackward::Kind::LeakyRelu, x.data(), negative_slope, 0.0, false, false)) \
  X(Out, gelu, (In x, GeluApproximation approximate = GeluApproximation::None))                                       \
  X(Out, softplus, (In x, double beta = 1.0, double threshold = 20.0), Record<SoftplusBackward>(x, beta, threshold),  \
    Autocast)
#include <wick/tensor/generated/elementwise_more_ops.inc>
// The unary ops of the table in wick/tensor/op_kinds.h (its Formula, Node and TensorOnly rows):
// `Tensor neg(const Tensor& x)`, `Tensor exp(const Tensor& x)`, ... one per row, declared in
// the file below, which tools/op_list.py writes from the table. Those up to bitwise_not
// keep the dtype (integers allowed where elementwise.cpp says); exp and the rest give a
// floating result (integer inputs are converted to float32 first). round is half to even (torch.round), trunc toward
// zero.
#include <wick/tensor/generated/unary_ops.inc>

// Derivatives used by autograd: f'(x) elementwise.
Tensor unary_grad(UnaryOp op, const Tensor& x);

// The dtype PyTorch would give a binary op on these operands (0-d tensors count less than
// dimensioned ones, as documented for torch.result_type).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);

// Operators.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
inline Tensor operator&&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
inline Tensor operator||(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
inline Tensor operator!(const Tensor& a) { return logical_not(a); }
inline Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
inline Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
inline Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
inline Tensor operator~(const Tensor& a) { return bitwise_not(a); }
// (A stream on the left still prints: std::ostream converts to neither Tensor nor Scalar.)
inline Tensor operator<<(const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }
inline Tensor operator<<(const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, b); }
inline Tensor operator<<(const Scalar& a, const Tensor& b) { return bitwise_left_shift(a, b); }
inline Tensor operator>>(const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }
inline Tensor operator>>(const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, b); }
inline Tensor operator>>(const Scalar& a, const Tensor& b) { return bitwise_right_shift(a, b); }
inline Tensor& operator<<=(Tensor& a, const Tensor& b) { return bitwise_left_shift_(a, b); }
inline Tensor& operator<<=(Tensor& a, const Scalar& b) { return bitwise_left_shift_(a, b); }
inline Tensor& operator>>=(Tensor& a, const Tensor& b) { return bitwise_right_shift_(a, b); }
inline Tensor& operator>>=(Tensor& a, const Scalar& b) { return bitwise_right_shift_(a, b); }
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
inline Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }

}  // namespace wick
