#pragma once
// The derivatives of the op tables' Formula rows (wick/tensor/op_kinds.h): autograd owns its
// formulas, the tensor layer only says which rows have one. tools/op_list.py joins each row
// here with its op row to write the Variable functions (wick/autograd/generated/
// *_ops_defs.inc), and refuses a Formula row without a derivative or a derivative without a
// Formula row; the static_asserts at the end of this header make the compiler refuse them
// too, in every file that includes it.
//
// Unary rows, X(Enumerator, derivative): g * f'(x) as autograd ops on the incoming gradient
// `g` and the input `x` (Variables), differentiable again for double backward; the helpers
// of functions/constants.h (step_derivative: the zero gradient of a piecewise constant op)
// are in scope.
#include <cstddef>

#include <wick/tensor/op_kinds.h>

#define WICK_UNARY_DERIVATIVES(X)                                                \
  X(Abs, mul(g, Variable(sign(x.data()))))                                       \
  X(Sign, step_derivative(g))                                                    \
  X(Floor, step_derivative(g))                                                   \
  X(Ceil, step_derivative(g))                                                    \
  X(Round, step_derivative(g))                                                   \
  X(Trunc, step_derivative(g))                                                   \
  X(Square, mul(mul(g, x), 2.0))                                                 \
  X(Log1p, div(g, add(x, 1.0)))                                                  \
  X(Expm1, mul(g, exp(x)))                                                       \
  X(Sqrt, mul(mul(g, rsqrt(x)), 0.5))                                            \
  /* -0.5 g rsqrt(x)^3, as PyTorch: at -0 rsqrt is -inf and the gradient +inf */ \
  X(Rsqrt, mul(mul(g, mul(square(rsqrt(x)), rsqrt(x))), -0.5))                   \
  X(Reciprocal, neg(div(g, square(x))))                                          \
  X(Sin, mul(g, cos(x)))                                                         \
  X(Cos, neg(mul(g, sin(x))))                                                    \
  X(Erf, mul(mul(g, exp(neg(square(x)))), 2.0 / std::sqrt(M_PI)))                \
  X(Tan, mul(g, add(square(tan(x)), 1.0)))                                       \
  X(Asin, mul(g, rsqrt(sub(1.0, square(x)))))                                    \
  X(Acos, neg(mul(g, rsqrt(sub(1.0, square(x))))))                               \
  X(Atan, div(g, add(square(x), 1.0)))                                           \
  X(Sinh, mul(g, cosh(x)))                                                       \
  X(Cosh, mul(g, sinh(x)))                                                       \
  X(Asinh, mul(g, rsqrt(add(square(x), 1.0))))                                   \
  X(Acosh, mul(g, rsqrt(sub(square(x), 1.0))))                                   \
  X(Atanh, div(g, sub(1.0, square(x))))                                          \
  X(Log2, div(g, mul(x, std::log(2.0))))                                         \
  X(Log10, div(g, mul(x, std::log(10.0))))                                       \
  X(Exp2, mul(mul(g, exp2(x)), std::log(2.0)))                                   \
  X(Erfc, mul(mul(g, exp(neg(square(x)))), -2.0 / std::sqrt(M_PI)))

// Reduction rows, X(Enumerator, saves, derivative): the gradient of x as autograd ops on `g`
// (the output's gradient with the reduced dims restored as size 1, so it broadcasts against
// x), `x` (the input), `dims` (the dims as given, for a recomputation with keepdim) and `n`
// (how many elements each output folds, a double), broadcast to x's shape by the node;
// saves: Input when the derivative reads `x`, Shape when it does not (the graph then does
// not keep the input alive).
#define WICK_REDUCE_DERIVATIVES(X)                                               \
  X(Sum, Shape, g)                                                               \
  X(Mean, Shape, div(g, n))                                                      \
  X(LogSumExp, Input, mul(g, exp(sub(x, logsumexp(x, dims, /*keepdim=*/true))))) \
  X(NanSum, Input, where(isnan(x.data()), constant_like(x, 0), g))

// Node rows of the binary table (Node and Numbers), X(Enumerator, node[, number node]
// [, Autocast]): a node is Record<Class>(arguments), the backward node recorded for the
// Variable inputs, constructed from the arguments (which may read the inputs `a` and `b`
// and the result `out`); a Numbers row's second node is its (Variable, Scalar) form's, for
// the input `a` and the number `b`. Autocast casts the inputs as autocast's row for the op
// says. The class comes from functions/elementwise.cpp, where the definitions are included.
#define WICK_BINARY_NODES(X)                                                                      \
  X(Add, Record<AddBackward>(a.shape(), b.shape(), 1.0), Record<AddScalarBackward>())             \
  X(Sub, Record<AddBackward>(a.shape(), b.shape(), -1.0), Record<AddScalarBackward>())            \
  X(Mul, Record<MulBackward>(a, b), Record<MulScalarBackward>(b))                                 \
  X(Div, Record<DivBackward>(a, b), Record<DivScalarBackward>(b))                                 \
  X(Pow, Record<PowTensorBackward>(a, b), Autocast)                                               \
  X(Minimum, Record<MinMaxBackward>(false, a.data(), b.data()))                                   \
  X(Maximum, Record<MinMaxBackward>(true, a.data(), b.data()))                                    \
  X(Remainder, Record<Atan2RemainderBackward>(Atan2RemainderBackward::Kind::Remainder, a, b))     \
  X(FloorDivide, Record<Atan2RemainderBackward>(Atan2RemainderBackward::Kind::FloorDivide, a, b)) \
  X(Atan2, Record<Atan2RemainderBackward>(Atan2RemainderBackward::Kind::Atan2, a, b), Autocast)   \
  X(Fmod, Record<Atan2RemainderBackward>(Atan2RemainderBackward::Kind::Fmod, a, b))

// Node rows of the unary table, X(Enumerator, node) as the binary ones (the input is `x`; a
// Float32 row of the unary table casts it first): WICK_UNARY_NODES' classes come from
// functions/elementwise.cpp, WICK_ACTIVATION_NODES' from functions/activations.cpp, where
// each table's definitions are included.
#define WICK_UNARY_NODES(X)                  \
  X(Neg, Record<NegBackward>())              \
  X(Exp, Record<ExpBackward>(x, out.data())) \
  X(Log, Record<LogBackward>(x))
#define WICK_ACTIVATION_NODES(X)                                                     \
  X(Relu, Record<ActivationBackward>("ReluBackward", UnaryOp::Relu, x))              \
  X(Tanh, Record<ActivationBackward>("TanhBackward", UnaryOp::TanhGrad, x))          \
  X(Sigmoid, Record<ActivationBackward>("SigmoidBackward", UnaryOp::SigmoidGrad, x)) \
  X(Silu, Record<ActivationBackward>("SiluBackward", UnaryOp::SiluGrad, x))

// The reduction table's Node rows (input `x`, `dims`, `keepdim`; a Float32 row casts first)
// and the scan table's Values rows (`x`, `dim`; Autocast as for the binary rows), classes
// from functions/reduce.cpp; scan_dim is the dim wrapped (0 for a 0-d input).
#define WICK_REDUCE_NODES(X) X(Prod, Record<ProdBackward>(x, dims, keepdim))
#define WICK_SCAN_NODES(X)                                                   \
  X(Sum, Record<CumsumBackward>(scan_dim("cumsum", x, dim)), Autocast)       \
  X(Prod, Record<CumprodBackward>(x, scan_dim("cumprod", x, dim)), Autocast) \
  X(LogSumExp, Record<LogcumsumexpBackward>(x, scan_dim("logcumsumexp", x, dim)))

namespace wick {

// True when `rows` (a derivative table's enumerators) names each Formula row of its op table
// exactly once and nothing else: the compiler's check that no differentiable row lacks a
// derivative.
template <class Op, size_t N>
constexpr bool one_derivative_per_formula_row(const Op (&rows)[N], int num_ops, OpForm (*form)(Op)) {
  size_t formulas = 0;
  for (int i = 0; i < num_ops; ++i) formulas += form(static_cast<Op>(i)) == OpForm::Formula;
  if (formulas != N) return false;
  for (size_t i = 0; i < N; ++i) {
    if (form(rows[i]) != OpForm::Formula) return false;
    for (size_t j = 0; j < i; ++j)
      if (rows[j] == rows[i]) return false;
  }
  return true;
}

#define WICK_UNARY_DERIVATIVE_ROW(e, ...) UnaryOp::e,
#define WICK_REDUCE_DERIVATIVE_ROW(e, ...) ReduceOp::e,
inline constexpr UnaryOp kUnaryDerivativeRows[] = {WICK_UNARY_DERIVATIVES(WICK_UNARY_DERIVATIVE_ROW)};
inline constexpr ReduceOp kReduceDerivativeRows[] = {WICK_REDUCE_DERIVATIVES(WICK_REDUCE_DERIVATIVE_ROW)};
#undef WICK_UNARY_DERIVATIVE_ROW
#undef WICK_REDUCE_DERIVATIVE_ROW
static_assert(one_derivative_per_formula_row(kUnaryDerivativeRows, kNumUnaryOps, unary_op_form),
              "a Formula row of the unary table without its derivative (or a stray one) above");
static_assert(one_derivative_per_formula_row(kReduceDerivativeRows, kNumReduceOps, reduce_op_form),
              "a Formula row of the reduction table without its derivative (or a stray one) above");

}  // namespace wick
