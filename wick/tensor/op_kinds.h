#pragma once
// The kinds of the kernel ops: the unary, binary, reduction and scan ops, one X-macro row
// each (enumerator, name, form, ...), and what each kind's rows share. Public, because ops
// take them (unary(UnaryOp::Exp, x)). The parameters entry points hand to kernels are
// beside the kernel table (kernel_params.h, internal) or beside the op that takes them
// (AttentionParams in attention.h, RecurrentCell in recurrent.h, PhiloxState in
// generator.h); the fused optimizers' hyper-parameters and their table in optim_hyper.h. The functions the op tables'
// rows declare are written out as plain C++ by tools/op_list.py (wick/tensor/generated/, wick/autograd/generated/; a
// ctest fails when they are stale).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <variant>

namespace wick {

// The unary ops: one row each, the only place an op is declared. A row is
//   X(Enumerator, name, form, autocast)
// - Enumerator: the UnaryOp; name: the op's function name (and its name in errors, the tests'
//   coverage checks and the kernel table);
// - form: Formula: `Tensor name(const Tensor&)` (wick/tensor/elementwise.h) and
//   `Variable name(const Variable&)` (wick/autograd/ops.h) are generated from the row, the
//   Variable's backward being the row's derivative in wick/autograd/derivatives.h (autograd
//   owns the formulas; every Formula row must have one, checked by the compiler). Node: both are declared from the row
//   and the Tensor function generated; the Variable function is written by hand (a backward node of its own, which
//   saves the output or fuses). TensorOnly: only the Tensor function (no Variable form). Custom: nothing is generated
//   (extra arguments, or autograd's gradient helpers);
// - autocast: Float32 when the op is on PyTorch's float32 autocast list (16-bit inputs compute
//   in float32 under an AutocastGuard, wick/autograd/autocast_policy.h), else Keep;
// Its math, once for the CPU and CUDA kernels, is kernels/elementwise_math.h; its test row,
// tests/autograd/unary_table.h. In groups, in this order:
// - keep the input dtype (bool/int allowed where wick/tensor/elementwise.cpp says):
//   Neg .. BitwiseNot;
// - floating only (the entry point converts integer inputs to the default float type):
//   Exp .. up to LogicalNot;
// - LogicalNot: any input, bool output;
// - gradient helpers used by autograd, out = f'(x) elementwise: SigmoidGrad .. SiluGrad.
// WICK_UNARY_OPS(X) expands X(Enumerator, name, form, autocast) per row;
// WICK_UNARY_TABLE(X, Y) expands X(Y, Enumerator, ...), for a consumer that passes a macro on.
#define WICK_UNARY_TABLE(X, Y)                                                   \
  X(Y, Neg, neg, Node, Keep)                                                     \
  X(Y, Abs, abs, Formula, Keep)                                                  \
  X(Y, Sign, sign, Formula, Keep)                                                \
  X(Y, Floor, floor, Formula, Keep)                                              \
  X(Y, Ceil, ceil, Formula, Keep)                                                \
  X(Y, Round, round, Formula, Keep) /* half to even */                           \
  X(Y, Trunc, trunc, Formula, Keep) /* toward zero */                            \
  X(Y, Relu, relu, Node, Keep)                                                   \
  X(Y, Square, square, Formula, Keep)                                            \
  X(Y, Clamp, clamp, Custom, Keep)                                               \
  X(Y, LeakyRelu, leaky_relu, Custom, Keep)                                      \
  X(Y, BitwiseNot, bitwise_not, TensorOnly, Keep)                                \
  X(Y, Exp, exp, Node, Float32)                                                  \
  X(Y, Log, log, Node, Float32)                                                  \
  X(Y, Log1p, log1p, Formula, Float32)                                           \
  X(Y, Expm1, expm1, Formula, Float32)                                           \
  X(Y, Sqrt, sqrt, Formula, Keep)                                                \
  X(Y, Rsqrt, rsqrt, Formula, Float32)                                           \
  X(Y, Reciprocal, reciprocal, Formula, Float32)                                 \
  X(Y, Sin, sin, Formula, Keep)                                                  \
  X(Y, Cos, cos, Formula, Keep)                                                  \
  X(Y, Tanh, tanh, Node, Keep)                                                   \
  X(Y, Sigmoid, sigmoid, Node, Keep)                                             \
  X(Y, Erf, erf, Formula, Keep)                                                  \
  X(Y, Tan, tan, Formula, Float32)                                               \
  X(Y, Asin, asin, Formula, Float32)                                             \
  X(Y, Acos, acos, Formula, Float32)                                             \
  X(Y, Atan, atan, Formula, Keep)                                                \
  X(Y, Sinh, sinh, Formula, Float32)                                             \
  X(Y, Cosh, cosh, Formula, Float32)                                             \
  X(Y, Asinh, asinh, Formula, Keep)                                              \
  X(Y, Acosh, acosh, Formula, Keep)                                              \
  X(Y, Atanh, atanh, Formula, Keep)                                              \
  X(Y, Log2, log2, Formula, Float32)                                             \
  X(Y, Log10, log10, Formula, Float32)                                           \
  X(Y, Exp2, exp2, Formula, Keep)                                                \
  X(Y, GeluTanh, gelu_tanh, Custom, Keep) /* gelu(x, GeluApproximation::Tanh) */ \
  X(Y, GeluErf, gelu, Custom, Keep)                                              \
  X(Y, Silu, silu, Node, Keep)                                                   \
  X(Y, Softplus, softplus, Custom, Float32)                                      \
  X(Y, Erfc, erfc, Formula, Keep)                                                \
  X(Y, LogicalNot, logical_not, TensorOnly, Keep)                                \
  X(Y, SigmoidGrad, sigmoid_grad, Custom, Keep)                                  \
  X(Y, TanhGrad, tanh_grad, Custom, Keep)                                        \
  X(Y, GeluTanhGrad, gelu_tanh_grad, Custom, Keep)                               \
  X(Y, GeluErfGrad, gelu_grad, Custom, Keep)                                     \
  X(Y, SiluGrad, silu_grad, Custom, Keep)
#define WICK_UNARY_ROW_TO(Y, ...) Y(__VA_ARGS__)
#define WICK_UNARY_OPS(X) WICK_UNARY_TABLE(WICK_UNARY_ROW_TO, X)

#define WICK_OP_ENUMERATOR(e, ...) e,
#define WICK_OP_COUNT(e, ...) +1
#define WICK_OP_FORM(e, name, form, ...) OpForm::form,
// What a unary or reduction row declares (the tables' form column, described above them).
enum class OpForm : uint8_t { Formula, Node, TensorOnly, Custom };
enum class UnaryOp : uint8_t { WICK_UNARY_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumUnaryOps = 0 WICK_UNARY_OPS(WICK_OP_COUNT);
constexpr OpForm unary_op_form(UnaryOp op) {
  constexpr OpForm forms[] = {WICK_UNARY_OPS(WICK_OP_FORM)};
  return forms[static_cast<int>(op)];
}
const char* unary_op_name(UnaryOp op);
// Ops defined only for floating types (LeakyRelu, Exp up to LogicalNot and the *Grad ops).
constexpr bool unary_op_is_floating(UnaryOp op) {
  return op == UnaryOp::LeakyRelu || (op >= UnaryOp::Exp && op < UnaryOp::LogicalNot) || op >= UnaryOp::SigmoidGrad;
}

// The binary ops: one row each, X(Enumerator, name, form, variable).
// - name: the op's function name (and its name in errors and the tests' coverage checks);
// - form: Both: `Tensor name(const Tensor&, const Tensor&)` and `Tensor name(const Tensor&,
//   const Scalar&)` are generated from the row (wick/tensor/elementwise.h); Tensors: only the
//   first; Compare: both, and `Tensor name(const Variable&, const Variable&)` (wick/autograd/
//   ops.h: comparisons of Variables give bool Tensors, no graph);
// - variable: the differentiable Variable functions declared from the row (wick/autograd/
//   ops.h) and defined by hand with their backward nodes (wick/autograd/functions/
//   elementwise.cpp): Numbers: `Variable name(const Variable&, const Variable&)` and the forms
//   with a number on either side; Node: the first only; None: no Variable function.
// Other forms (a number first for Tensors, in place) are written by hand. Comparisons
// (Eq .. Ge) give bool, the logical ops take and give bool (every op from Eq on gives bool:
// new ones go before it). The shifts take integers only. The math, once for the CPU and
// CUDA kernels, is kernels/elementwise_math.h; the test rows tests/autograd/binary_table.h.
#define WICK_BINARY_OPS(X)                       \
  X(Add, add, Both, Numbers)                     \
  X(Sub, sub, Both, Numbers)                     \
  X(Mul, mul, Both, Numbers)                     \
  X(Div, div, Both, Numbers)                     \
  X(Pow, pow, Tensors, Node)                     \
  X(Minimum, minimum, Both, Node)                \
  X(Maximum, maximum, Both, Node)                \
  X(Remainder, remainder, Tensors, Node)         \
  X(FloorDivide, floor_divide, Tensors, Node)    \
  X(Atan2, atan2, Tensors, Node)                 \
  X(Fmod, fmod, Both, Node)                      \
  X(BitwiseAnd, bitwise_and, Both, None)         \
  X(BitwiseOr, bitwise_or, Both, None)           \
  X(BitwiseXor, bitwise_xor, Both, None)         \
  X(LeftShift, bitwise_left_shift, Both, None)   \
  X(RightShift, bitwise_right_shift, Both, None) \
  X(Eq, eq, Compare, None)                       \
  X(Ne, ne, Compare, None)                       \
  X(Lt, lt, Compare, None)                       \
  X(Le, le, Compare, None)                       \
  X(Gt, gt, Compare, None)                       \
  X(Ge, ge, Compare, None)                       \
  X(LogicalAnd, logical_and, Tensors, None)      \
  X(LogicalOr, logical_or, Tensors, None)

enum class BinaryOp : uint8_t { WICK_BINARY_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumBinaryOps = 0 WICK_BINARY_OPS(WICK_OP_COUNT);
const char* binary_op_name(BinaryOp op);
inline bool binary_op_is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }
// Ops defined only for floating types: integer inputs are converted to the default float type.
constexpr bool binary_op_is_floating(BinaryOp op) { return op == BinaryOp::Div || op == BinaryOp::Atan2; }
constexpr bool binary_op_is_bitwise(BinaryOp op) {
  return op == BinaryOp::BitwiseAnd || op == BinaryOp::BitwiseOr || op == BinaryOp::BitwiseXor;
}
constexpr bool binary_op_is_shift(BinaryOp op) { return op == BinaryOp::LeftShift || op == BinaryOp::RightShift; }

// The reductions over dims: one row each, the only place such an op is declared. A row is
//   X(Enumerator, name, form, input, output, autocast)
// - Enumerator: the ReduceOp; name: the op's function name (and its name in errors and the
//   kernel table; Max and Min's functions over dims are amax/amin, written by hand);
// - form: Formula: `Tensor name(const Tensor& x, const Dims& dims = {}, bool keepdim = false)`
//   (wick/tensor/reduce.h) and the Variable function of the same arguments (wick/autograd/
//   ops.h) are generated, the Variable's backward being the row's derivative in
//   wick/autograd/derivatives.h (every Formula row has one there). Node: both are declared
//   from the row and the Tensor function generated; the Variable function has a backward node
//   of its own, written by hand. TensorOnly: only the Tensor function (no Variable form).
//   Custom: nothing is generated (extra arguments, checks of its own);
// - input: Any (every dtype), Floating (floating only: integers are refused), ToFloat
//   (integers are read as the default float type, as PyTorch's);
// - output: Same (the input's dtype), Widened (bool and integers give int64, wrapping
//   around), Truth (bool; uint8 stays uint8, as PyTorch's);
// - autocast: Float32 when the op is on PyTorch's float32 autocast list, else Keep;
// Its math, once for the CPU and CUDA kernels, is kernels/reduce_math.h (its functor and its
// line in reduce_fn); its test row, tests/autograd/reduce_table.h. Max and Min also have an
// index form (reduce_with_index). New ops go at the end (kernel names carry the number).
// WICK_REDUCE_OPS(X) expands X(Enumerator, name, form, ...) per row; WICK_REDUCE_TABLE(X, Y)
// expands X(Y, Enumerator, ...), for a consumer that passes a macro on.
#define WICK_REDUCE_TABLE(X, Y)                                                             \
  X(Y, Sum, sum, Formula, Any, Widened, Float32)                                            \
  X(Y, Prod, prod, Node, Any, Widened, Float32)                                             \
  X(Y, Max, max, Custom, Any, Same, Keep)                                                   \
  X(Y, Min, min, Custom, Any, Same, Keep)                                                   \
  X(Y, All, all, TensorOnly, Any, Truth, Keep)                                              \
  X(Y, Any, any, TensorOnly, Any, Truth, Keep)                                              \
  /* mean is its own kernel op, not sum / n: float16 folds in float32 and divides before */ \
  /* rounding (the mean of 100,000 float16 ones is 1, where the sum is inf) */              \
  X(Y, Mean, mean, Formula, Floating, Same, Keep)                                           \
  X(Y, Var, var, Custom, Floating, Same, Keep)                                              \
  X(Y, NormP, norm, Custom, Floating, Same, Float32)                                        \
  X(Y, LogSumExp, logsumexp, Formula, ToFloat, Same, Float32)                               \
  X(Y, NanSum, nansum, Formula, Any, Widened, Keep)
#define WICK_REDUCE_OPS(X) WICK_REDUCE_TABLE(WICK_UNARY_ROW_TO, X)

// The inclusive scans along one dim, X(Enumerator, name, result); their math is
// kernels/scan_math.h. From a row come the enumerator and its name, and the declarations of
// the Tensor function (wick/tensor/reduce.h) and the Variable one (wick/autograd/ops.h), both
// defined by hand (dtype checks of their own; backward nodes in wick/autograd/functions/
// reduce.cpp): result Values: `Tensor name(const Tensor& x, int64_t dim)` and the Variable
// form; Indices: `std::pair<Tensor, Tensor> name(const Tensor& x, int64_t dim)` (values and
// int64 indices) and `std::pair<Variable, Tensor> name(const Variable& x, int64_t dim)`.
#define WICK_SCAN_OPS(X) \
  X(Sum, cumsum, Values) \
  X(Prod, cumprod, Values) X(Max, cummax, Indices) X(Min, cummin, Indices) X(LogSumExp, logcumsumexp, Values)

enum class ReduceOp : uint8_t { WICK_REDUCE_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumReduceOps = 0 WICK_REDUCE_OPS(WICK_OP_COUNT);
constexpr OpForm reduce_op_form(ReduceOp op) {
  constexpr OpForm forms[] = {WICK_REDUCE_OPS(WICK_OP_FORM)};
  return forms[static_cast<int>(op)];
}
const char* reduce_op_name(ReduceOp op);
enum class ReduceInput : uint8_t { Any, Floating, ToFloat };
enum class ReduceOutput : uint8_t { Same, Widened, Truth };
#define WICK_REDUCE_INPUT_OF(e, n, form, input, ...) ReduceInput::input,
#define WICK_REDUCE_OUTPUT_OF(e, n, form, input, output, ...) ReduceOutput::output,
constexpr ReduceInput reduce_op_input(ReduceOp op) {
  constexpr ReduceInput inputs[] = {WICK_REDUCE_OPS(WICK_REDUCE_INPUT_OF)};
  return inputs[static_cast<int>(op)];
}
constexpr ReduceOutput reduce_op_output(ReduceOp op) {
  constexpr ReduceOutput outputs[] = {WICK_REDUCE_OPS(WICK_REDUCE_OUTPUT_OF)};
  return outputs[static_cast<int>(op)];
}
#undef WICK_REDUCE_INPUT_OF
#undef WICK_REDUCE_OUTPUT_OF

enum class ScanOp : uint8_t { WICK_SCAN_OPS(WICK_OP_ENUMERATOR) };
const char* scan_op_name(ScanOp op);
#undef WICK_OP_ENUMERATOR
#undef WICK_OP_COUNT
#undef WICK_OP_FORM

}  // namespace wick
