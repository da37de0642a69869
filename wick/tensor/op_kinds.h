#pragma once
// The kinds of the kernel ops and the parameters entry points hand to kernels: the unary,
// binary, reduction and scan ops (one X-macro line each: enumerator and name), random draws,
// convolution, pooling, attention and recurrent-step geometry, the fused optimizers'
// hyper-parameters. Public, because ops take them (unary(UnaryOp::Exp, x)); the table of
// kernels that uses them (dispatch.h) is internal. The functions the op tables' rows declare
// are written out as plain C++ by tools/op_list.py (wick/tensor/generated/,
// wick/autograd/generated/; a ctest fails when they are stale).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <variant>

namespace wick {

// The unary ops: one row each, the only place an op is declared. A row is
//   X(Enumerator, name, form, autocast, derivative)
// - Enumerator: the UnaryOp; name: the op's function name (and its name in errors, the tests'
//   coverage checks and the kernel table);
// - form: Formula: `Tensor name(const Tensor&)` (wick/tensor/elementwise.h) and
//   `Variable name(const Variable&)` (wick/autograd/ops.h) are generated from the row, the
//   Variable's backward being `derivative`. Node: both are declared from the row and the Tensor
//   function generated; the Variable function is written by hand (a backward node of its own,
//   which saves the output or fuses). TensorOnly: only the Tensor function (no Variable form).
//   Custom: nothing is generated (extra arguments, or autograd's gradient helpers);
// - autocast: Float32 when the op is on PyTorch's float32 autocast list (16-bit inputs compute
//   in float32 under an AutocastGuard, wick/autograd/autocast_policy.h), else Keep;
// - derivative (Formula rows): g * f'(x) as an expression of autograd ops on the incoming
//   gradient `g` and the input `x` (Variables), differentiable again for double backward
//   (written by tools/op_list.py into wick/autograd/generated/unary_ops_defs.inc, included by
//   wick/autograd/functions/elementwise.cpp, where the helpers of functions/constants.h,
//   such as step_derivative, are in scope); `_` elsewhere.
// Its math, once for the CPU and CUDA kernels, is kernels/elementwise_math.h; its test row,
// tests/autograd/unary_table.h. In groups, in this order:
// - keep the input dtype (bool/int allowed where wick/tensor/elementwise.cpp says):
//   Neg .. BitwiseNot;
// - floating only (the entry point converts integer inputs to the default float type):
//   Exp .. up to LogicalNot;
// - LogicalNot: any input, bool output;
// - gradient helpers used by autograd, out = f'(x) elementwise: SigmoidGrad .. SiluGrad.
// WICK_UNARY_OPS(X) expands X(Enumerator, name, form, autocast, derivative) per row;
// WICK_UNARY_TABLE(X, Y) expands X(Y, Enumerator, ...), for a consumer that passes a macro on.
#define WICK_UNARY_TABLE(X, Y)                                                                     \
  X(Y, Neg, neg, Node, Keep, _)                                                                    \
  X(Y, Abs, abs, Formula, Keep, mul(g, Variable(sign(x.data()))))                                  \
  X(Y, Sign, sign, Formula, Keep, step_derivative(g))                                              \
  X(Y, Floor, floor, Formula, Keep, step_derivative(g))                                            \
  X(Y, Ceil, ceil, Formula, Keep, step_derivative(g))                                              \
  X(Y, Round, round, Formula, Keep, step_derivative(g)) /* half to even */                         \
  X(Y, Trunc, trunc, Formula, Keep, step_derivative(g)) /* toward zero */                          \
  X(Y, Relu, relu, Node, Keep, _)                                                                  \
  X(Y, Square, square, Formula, Keep, mul(mul(g, x), 2.0))                                         \
  X(Y, Clamp, clamp, Custom, Keep, _)                                                              \
  X(Y, LeakyRelu, leaky_relu, Custom, Keep, _)                                                     \
  X(Y, BitwiseNot, bitwise_not, TensorOnly, Keep, _)                                               \
  X(Y, Exp, exp, Node, Float32, _)                                                                 \
  X(Y, Log, log, Node, Float32, _)                                                                 \
  X(Y, Log1p, log1p, Formula, Float32, div(g, add(x, 1.0)))                                        \
  X(Y, Expm1, expm1, Formula, Float32, mul(g, exp(x)))                                             \
  X(Y, Sqrt, sqrt, Formula, Keep, mul(mul(g, rsqrt(x)), 0.5))                                      \
  /* -0.5 g rsqrt(x)^3, as PyTorch: at -0 rsqrt is -inf and the gradient +inf */                   \
  X(Y, Rsqrt, rsqrt, Formula, Float32, mul(mul(g, mul(square(rsqrt(x)), rsqrt(x))), -0.5))         \
  X(Y, Reciprocal, reciprocal, Formula, Float32, neg(div(g, square(x))))                           \
  X(Y, Sin, sin, Formula, Keep, mul(g, cos(x)))                                                    \
  X(Y, Cos, cos, Formula, Keep, neg(mul(g, sin(x))))                                               \
  X(Y, Tanh, tanh, Node, Keep, _)                                                                  \
  X(Y, Sigmoid, sigmoid, Node, Keep, _)                                                            \
  X(Y, Erf, erf, Formula, Keep, mul(mul(g, exp(neg(square(x)))), 2.0 / std::sqrt(M_PI)))           \
  X(Y, Tan, tan, Formula, Float32, mul(g, add(square(tan(x)), 1.0)))                               \
  X(Y, Asin, asin, Formula, Float32, mul(g, rsqrt(sub(1.0, square(x)))))                           \
  X(Y, Acos, acos, Formula, Float32, neg(mul(g, rsqrt(sub(1.0, square(x))))))                      \
  X(Y, Atan, atan, Formula, Keep, div(g, add(square(x), 1.0)))                                     \
  X(Y, Sinh, sinh, Formula, Float32, mul(g, cosh(x)))                                              \
  X(Y, Cosh, cosh, Formula, Float32, mul(g, sinh(x)))                                              \
  X(Y, Asinh, asinh, Formula, Keep, mul(g, rsqrt(add(square(x), 1.0))))                            \
  X(Y, Acosh, acosh, Formula, Keep, mul(g, rsqrt(sub(square(x), 1.0))))                            \
  X(Y, Atanh, atanh, Formula, Keep, div(g, sub(1.0, square(x))))                                   \
  X(Y, Log2, log2, Formula, Float32, div(g, mul(x, std::log(2.0))))                                \
  X(Y, Log10, log10, Formula, Float32, div(g, mul(x, std::log(10.0))))                             \
  X(Y, Exp2, exp2, Formula, Keep, mul(mul(g, exp2(x)), std::log(2.0)))                             \
  X(Y, GeluTanh, gelu_tanh, Custom, Keep, _) /* gelu(x, GeluApproximation::Tanh) */                \
  X(Y, GeluErf, gelu, Custom, Keep, _)                                                             \
  X(Y, Silu, silu, Node, Keep, _)                                                                  \
  X(Y, Softplus, softplus, Custom, Float32, _)                                                     \
  X(Y, Erfc, erfc, Formula, Keep, mul(mul(g, exp(neg(square(x)))), -2.0 / std::sqrt(M_PI)))         \
  X(Y, LogicalNot, logical_not, TensorOnly, Keep, _)                                               \
  X(Y, SigmoidGrad, sigmoid_grad, Custom, Keep, _)                                                 \
  X(Y, TanhGrad, tanh_grad, Custom, Keep, _)                                                       \
  X(Y, GeluTanhGrad, gelu_tanh_grad, Custom, Keep, _)                                              \
  X(Y, GeluErfGrad, gelu_grad, Custom, Keep, _)                                                    \
  X(Y, SiluGrad, silu_grad, Custom, Keep, _)
#define WICK_UNARY_ROW_TO(Y, ...) Y(__VA_ARGS__)
#define WICK_UNARY_OPS(X) WICK_UNARY_TABLE(WICK_UNARY_ROW_TO, X)

#define WICK_OP_ENUMERATOR(e, ...) e,
#define WICK_OP_COUNT(e, ...) +1
enum class UnaryOp : uint8_t { WICK_UNARY_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumUnaryOps = 0 WICK_UNARY_OPS(WICK_OP_COUNT);
const char* unary_op_name(UnaryOp op);
// Ops defined only for floating types (LeakyRelu, Exp up to LogicalNot and the *Grad ops).
constexpr bool unary_op_is_floating(UnaryOp op) {
  return op == UnaryOp::LeakyRelu || (op >= UnaryOp::Exp && op < UnaryOp::LogicalNot) || op >= UnaryOp::SigmoidGrad;
}

// Extra arguments of some unary ops (clamp bounds, leaky slope, softplus beta/threshold).
struct UnaryParams {
  double a = 0.0;
  double b = 0.0;
};

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
#define WICK_BINARY_OPS(X)                                                                                  \
  X(Add, add, Both, Numbers) X(Sub, sub, Both, Numbers) X(Mul, mul, Both, Numbers)                          \
  X(Div, div, Both, Numbers) X(Pow, pow, Tensors, Node) X(Minimum, minimum, Both, Node)                     \
  X(Maximum, maximum, Both, Node) X(Remainder, remainder, Tensors, Node)                                    \
  X(FloorDivide, floor_divide, Tensors, Node) X(Atan2, atan2, Tensors, Node) X(Fmod, fmod, Both, Node)      \
  X(BitwiseAnd, bitwise_and, Both, None) X(BitwiseOr, bitwise_or, Both, None)                               \
  X(BitwiseXor, bitwise_xor, Both, None) X(LeftShift, bitwise_left_shift, Both, None)                       \
  X(RightShift, bitwise_right_shift, Both, None) X(Eq, eq, Compare, None) X(Ne, ne, Compare, None)          \
  X(Lt, lt, Compare, None) X(Le, le, Compare, None) X(Gt, gt, Compare, None) X(Ge, ge, Compare, None)       \
  X(LogicalAnd, logical_and, Tensors, None) X(LogicalOr, logical_or, Tensors, None)

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
//   X(Enumerator, name, form, input, output, autocast, saves, derivative)
// - Enumerator: the ReduceOp; name: the op's function name (and its name in errors and the
//   kernel table; Max and Min's functions over dims are amax/amin, written by hand);
// - form: Formula: `Tensor name(const Tensor& x, const Dims& dims = {}, bool keepdim = false)`
//   (wick/tensor/reduce.h) and the Variable function of the same arguments (wick/autograd/
//   ops.h) are generated, the Variable's backward being `derivative`. Node: both are declared
//   from the row and the Tensor function generated; the Variable function has a backward node
//   of its own, written by hand. TensorOnly: only the Tensor function (no Variable form).
//   Custom: nothing is generated (extra arguments, checks of its own);
// - input: Any (every dtype), Floating (floating only: integers are refused), ToFloat
//   (integers are read as the default float type, as PyTorch's);
// - output: Same (the input's dtype), Widened (bool and integers give int64, wrapping
//   around), Truth (bool; uint8 stays uint8, as PyTorch's);
// - autocast: Float32 when the op is on PyTorch's float32 autocast list, else Keep;
// - saves (Formula rows): Input when the derivative reads `x`, Shape when it does not (the
//   input is not kept alive by the graph then);
// - derivative (Formula rows): the gradient of x as autograd ops on `g` (the output's
//   gradient with the reduced dims restored as size 1, so it broadcasts against x), `x` (the
//   input), `dims` (the dims as given, for a recomputation with keepdim) and `n` (how many
//   elements each output folds, a double); broadcast to x's shape by the node, and
//   differentiable again for double backward (written by tools/op_list.py into
//   wick/autograd/generated/reduce_ops_defs.inc, included by wick/autograd/functions/reduce.cpp).
// Its math, once for the CPU and CUDA kernels, is kernels/reduce_math.h (its functor and its
// line in reduce_fn); its test row, tests/autograd/reduce_table.h. Max and Min also have an
// index form (reduce_with_index). New ops go at the end (kernel names carry the number).
// WICK_REDUCE_OPS(X) expands X(Enumerator, name, form, ...) per row; WICK_REDUCE_TABLE(X, Y)
// expands X(Y, Enumerator, ...), for a consumer that passes a macro on.
#define WICK_REDUCE_TABLE(X, Y)                                                                    \
  X(Y, Sum, sum, Formula, Any, Widened, Float32, Shape, g)                                         \
  X(Y, Prod, prod, Node, Any, Widened, Float32, Shape, _)                                          \
  X(Y, Max, max, Custom, Any, Same, Keep, Shape, _)                                                \
  X(Y, Min, min, Custom, Any, Same, Keep, Shape, _)                                                \
  X(Y, All, all, TensorOnly, Any, Truth, Keep, Shape, _)                                           \
  X(Y, Any, any, TensorOnly, Any, Truth, Keep, Shape, _)                                           \
  /* mean is its own kernel op, not sum / n: float16 folds in float32 and divides before */         \
  /* rounding (the mean of 100,000 float16 ones is 1, where the sum is inf) */                      \
  X(Y, Mean, mean, Formula, Floating, Same, Keep, Shape, div(g, n))                                \
  X(Y, Var, var, Custom, Floating, Same, Keep, Shape, _)                                           \
  X(Y, NormP, norm, Custom, Floating, Same, Float32, Shape, _)                                     \
  X(Y, LogSumExp, logsumexp, Formula, ToFloat, Same, Float32, Input,                               \
    mul(g, exp(sub(x, logsumexp(x, dims, /*keepdim=*/true)))))                                    \
  X(Y, NanSum, nansum, Formula, Any, Widened, Keep, Input, where(isnan(x.data()), constant_like(x, 0), g))
#define WICK_REDUCE_OPS(X) WICK_REDUCE_TABLE(WICK_UNARY_ROW_TO, X)

// The inclusive scans along one dim, X(Enumerator, name, result); their math is
// kernels/scan_math.h. From a row come the enumerator and its name, and the declarations of
// the Tensor function (wick/tensor/reduce.h) and the Variable one (wick/autograd/ops.h), both
// defined by hand (dtype checks of their own; backward nodes in wick/autograd/functions/
// reduce.cpp): result Values: `Tensor name(const Tensor& x, int64_t dim)` and the Variable
// form; Indices: `std::pair<Tensor, Tensor> name(const Tensor& x, int64_t dim)` (values and
// int64 indices) and `std::pair<Variable, Tensor> name(const Variable& x, int64_t dim)`.
#define WICK_SCAN_OPS(X)                                                                                    \
  X(Sum, cumsum, Values) X(Prod, cumprod, Values) X(Max, cummax, Indices) X(Min, cummin, Indices)           \
  X(LogSumExp, logcumsumexp, Values)

enum class ReduceOp : uint8_t { WICK_REDUCE_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumReduceOps = 0 WICK_REDUCE_OPS(WICK_OP_COUNT);
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

enum class RandomKind : uint8_t { Uniform, Normal, RandInt, Bernoulli };

// The state one random draw uses: Philox4x32-10 keyed by `seed`, element i of the output
// uses counter `offset + i`, so results depend on neither thread count nor launch shape,
// and the CPU and CUDA kernels produce the same numbers.
struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// --- conv and pooling (parameters; the slots are at the end of KernelTable)
// A 2-d convolution's geometry, [0] = height, [1] = width. conv1d is conv2d with height 1.
struct ConvParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};
// A 2-d pooling window. The output size is out's shape (the entry point applies ceil_mode).
struct PoolParams {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  bool count_include_pad = true;  // avg_pool2d: divide by the window clipped to the padded input
};

// Scaled dot-product attention (the slots are after the losses in KernelTable).
struct AttentionParams {
  double scale = 1.0;   // a score is scale * (q . k) + bias
  bool causal = false;  // key s is masked for query l when s > l (top-left aligned, as PyTorch)
  // Dropout of the attention weights (after the softmax): weight (b, h, i, j) is kept with
  // probability 1 - dropout, and then multiplied by 1 / (1 - dropout), by the draw that
  // Philox counter dropout_state.offset + n makes, n = ((b Hq + h) L + i) S + j its index in
  // [B, Hq, L, S]: the draw bernoulli(1 - dropout) makes for element n of a [B, Hq, L, S]
  // tensor (kernels/attention_math.h, Dropout). The backward regenerates the same mask
  // from the same state.
  double dropout = 0.0;
  PhiloxState dropout_state{};
};

// The element-wise part of one time step of a recurrent layer (the slots are after attention
// in KernelTable; kernels/recurrent_math.h has the math).
enum class RecurrentCell : uint8_t { RnnTanh, RnnRelu, Lstm, Gru };
// Gates per step: RNN 1, LSTM 4 (i, f, g, o), GRU 3 (r, z, n).
constexpr int64_t recurrent_gates(RecurrentCell cell) {
  return cell == RecurrentCell::Lstm ? 4 : cell == RecurrentCell::Gru ? 3 : 1;
}

// The fused multi-tensor optimizer steps, one row each: X(Hyper, name). From a row come
// `void name(params, grads, state, const Hyper&)` (wick/tensor/optim_step.h: its lists
// checked, then one kernel slot for every optimizer), its alternative of FusedHyper (what the
// slot takes) and its name in errors and the README's op list. The Hyper struct, above the
// table, holds the step's hyper-parameters and says which state buffers the step keeps
// (kState: their names, in the order its update reads them) and which of them it uses with
// these values (uses_state; an unused list may be empty), and what it refuses (refusal: a
// reason, empty when the values are fine). Its per-element update, once for the CPU and
// CUDA, is FusedUpdate<C, Hyper> in kernels/optim_math.h; its test row (a float64
// reference update), tests/tensor/fused_optim_table.h.

// SGD (torch.optim.SGD semantics).
struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // momentum buffers are set to the gradient rather than blended
  static constexpr std::array<const char*, 1> kState = {"momentum_buffer"};
  bool uses_state(size_t) const { return momentum != 0; }
  std::string refusal() const {
    return nesterov && (momentum <= 0 || dampening != 0) ? "nesterov momentum requires a momentum and zero dampening"
                                                          : "";
  }
};

// Adam / AdamW; `step` counts from 1.
struct AdamHyper {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  int64_t step = 1;
  bool decoupled_weight_decay = true;  // AdamW: p *= 1 - lr * wd; Adam: g += wd * p
  static constexpr std::array<const char*, 2> kState = {"exp_avg", "exp_avg_sq"};
  bool uses_state(size_t) const { return true; }
  std::string refusal() const { return step >= 1 ? "" : "step counts from 1, got " + std::to_string(step); }
};

// RMSprop (torch.optim.RMSprop semantics): grad_avg only when centered, momentum_buffer only
// with a momentum.
struct RMSpropHyper {
  double lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false;
  static constexpr std::array<const char*, 3> kState = {"square_avg", "grad_avg", "momentum_buffer"};
  bool uses_state(size_t k) const { return k == 0 || (k == 1 && centered) || (k == 2 && momentum != 0); }
  std::string refusal() const { return ""; }
};

#define WICK_FUSED_OPTIMIZERS(X) \
  X(SgdHyper, sgd_step)          \
  X(AdamHyper, adam_step)        \
  X(RMSpropHyper, rmsprop_step)

// How many state buffers optimizer H keeps; the most any row keeps.
template <class H>
inline constexpr size_t kFusedStates = std::tuple_size_v<decltype(H::kState)>;
#define WICK_FUSED_STATES(H, name) kFusedStates<H>,
inline constexpr size_t kMaxFusedStates = std::max({WICK_FUSED_OPTIMIZERS(WICK_FUSED_STATES) size_t{0}});
#undef WICK_FUSED_STATES

// A row's function name (its op name in errors).
template <class H>
inline constexpr const char* fused_step_name = nullptr;
#define WICK_FUSED_NAME(H, name) \
  template <>                    \
  inline constexpr const char* fused_step_name<H> = #name;
WICK_FUSED_OPTIMIZERS(WICK_FUSED_NAME)
#undef WICK_FUSED_NAME

// One alternative per row: the hyper-parameters the fused_step kernel slot takes.
namespace detail {
template <class Tuple>
struct VariantOf;
template <class... H>
struct VariantOf<std::tuple<H...>> {
  using type = std::variant<H...>;
};
}  // namespace detail
#define WICK_FUSED_TUPLE(H, name) std::tuple<H>{},
using FusedHyper =
    detail::VariantOf<decltype(std::tuple_cat(WICK_FUSED_OPTIMIZERS(WICK_FUSED_TUPLE) std::tuple<>{}))>::type;
#undef WICK_FUSED_TUPLE

}  // namespace wick
