#pragma once
// The kinds of the kernel ops and the parameters entry points hand to kernels: the unary,
// binary, reduction and scan ops (one X-macro line each: enumerator and name), random draws,
// convolution, pooling, attention and recurrent-step geometry, the fused optimizers'
// hyper-parameters. Public, because ops take them (unary(UnaryOp::Exp, x)); the table of
// kernels that uses them (dispatch.h) is internal.
#include <cstdint>

namespace wick {

// The unary kernel ops, X(enumerator, name): one line adds an op's enumerator and its name
// (errors, the tests' coverage check). In groups, in this order:
// - keep the input dtype (bool/int allowed where wick/tensor/elementwise.cpp says):
//   Neg .. BitwiseNot;
// - floating only (the entry point converts integer inputs to the default float type):
//   Exp .. Softplus;
// - LogicalNot: any input, bool output;
// - gradient helpers used by autograd, out = f'(x) elementwise: SigmoidGrad .. SiluGrad.
#define WICK_UNARY_OPS(X)                                                                                   \
  X(Neg, "neg") X(Abs, "abs") X(Sign, "sign") X(Floor, "floor") X(Ceil, "ceil") X(Round, "round")           \
  X(Trunc, "trunc") X(Relu, "relu") X(Square, "square") X(Clamp, "clamp") X(LeakyRelu, "leaky_relu")        \
  X(BitwiseNot, "bitwise_not")                                                                              \
  X(Exp, "exp") X(Log, "log") X(Log1p, "log1p") X(Expm1, "expm1") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt")         \
  X(Reciprocal, "reciprocal") X(Sin, "sin") X(Cos, "cos") X(Tanh, "tanh") X(Sigmoid, "sigmoid")             \
  X(Erf, "erf") X(Tan, "tan") X(Asin, "asin") X(Acos, "acos") X(Atan, "atan") X(Sinh, "sinh")               \
  X(Cosh, "cosh") X(Asinh, "asinh") X(Acosh, "acosh") X(Atanh, "atanh") X(Log2, "log2") X(Log10, "log10")   \
  X(Exp2, "exp2") X(GeluTanh, "gelu_tanh") X(GeluErf, "gelu") X(Silu, "silu") X(Softplus, "softplus")       \
  X(LogicalNot, "logical_not")                                                                              \
  X(SigmoidGrad, "sigmoid_grad") X(TanhGrad, "tanh_grad") X(GeluTanhGrad, "gelu_tanh_grad")                 \
  X(GeluErfGrad, "gelu_grad") X(SiluGrad, "silu_grad")

#define WICK_OP_ENUMERATOR(e, n) e,
#define WICK_OP_COUNT(e, n) +1
enum class UnaryOp : uint8_t { WICK_UNARY_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumUnaryOps = 0 WICK_UNARY_OPS(WICK_OP_COUNT);
const char* unary_op_name(UnaryOp op);
// Ops defined only for floating types (LeakyRelu, Exp..Softplus and the *Grad ops).
constexpr bool unary_op_is_floating(UnaryOp op) {
  return op == UnaryOp::LeakyRelu || (op >= UnaryOp::Exp && op <= UnaryOp::Softplus) || op >= UnaryOp::SigmoidGrad;
}

// Extra arguments of some unary ops (clamp bounds, leaky slope, softplus beta/threshold).
struct UnaryParams {
  double a = 0.0;
  double b = 0.0;
};

// The binary kernel ops, X(enumerator, name); comparisons (Eq .. Ge) give bool, the logical
// ops take and give bool (every op from Eq on gives bool: new ones go before it). The
// shifts take integers only.
#define WICK_BINARY_OPS(X)                                                                                  \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div") X(Pow, "pow") X(Minimum, "minimum")               \
  X(Maximum, "maximum") X(Remainder, "remainder") X(FloorDivide, "floor_divide") X(Atan2, "atan2")          \
  X(Fmod, "fmod") X(BitwiseAnd, "bitwise_and") X(BitwiseOr, "bitwise_or") X(BitwiseXor, "bitwise_xor")     \
  X(LeftShift, "bitwise_left_shift") X(RightShift, "bitwise_right_shift")                                   \
  X(Eq, "eq") X(Ne, "ne") X(Lt, "lt") X(Le, "le") X(Gt, "gt") X(Ge, "ge")                                   \
  X(LogicalAnd, "logical_and") X(LogicalOr, "logical_or")

enum class BinaryOp : uint8_t { WICK_BINARY_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumBinaryOps = 0 WICK_BINARY_OPS(WICK_OP_COUNT);
const char* binary_op_name(BinaryOp op);
inline bool binary_op_is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }
constexpr bool binary_op_is_bitwise(BinaryOp op) {
  return op == BinaryOp::BitwiseAnd || op == BinaryOp::BitwiseOr || op == BinaryOp::BitwiseXor;
}
constexpr bool binary_op_is_shift(BinaryOp op) { return op == BinaryOp::LeftShift || op == BinaryOp::RightShift; }

// The reduction kernel ops, X(enumerator, name); their math, shared by the CPU and CUDA
// kernels, is kernels/reduce_math.h. Max and Min also have an index form (reduce_with_index).
#define WICK_REDUCE_OPS(X)                                                                                  \
  X(Sum, "sum") X(Prod, "prod") X(Max, "max") X(Min, "min") X(All, "all") X(Any, "any") X(Mean, "mean")    \
  X(Var, "var") X(NormP, "norm") X(LogSumExp, "logsumexp")

// The inclusive scans along one dim, X(enumerator, name); their math is kernels/scan_math.h.
#define WICK_SCAN_OPS(X)                                                                                    \
  X(Sum, "cumsum") X(Prod, "cumprod") X(Max, "cummax") X(Min, "cummin") X(LogSumExp, "logcumsumexp")

enum class ReduceOp : uint8_t { WICK_REDUCE_OPS(WICK_OP_ENUMERATOR) };
inline constexpr int kNumReduceOps = 0 WICK_REDUCE_OPS(WICK_OP_COUNT);
const char* reduce_op_name(ReduceOp op);

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
};

// The element-wise part of one time step of a recurrent layer (the slots are after attention
// in KernelTable; kernels/recurrent_math.h has the math).
enum class RecurrentCell : uint8_t { RnnTanh, RnnRelu, Lstm, Gru };
// Gates per step: RNN 1, LSTM 4 (i, f, g, o), GRU 3 (r, z, n).
constexpr int64_t recurrent_gates(RecurrentCell cell) {
  return cell == RecurrentCell::Lstm ? 4 : cell == RecurrentCell::Gru ? 3 : 1;
}

// Hyper-parameters of one fused SGD step (PyTorch's torch.optim.SGD semantics).
struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // momentum buffers are set to the gradient rather than blended
};

// Hyper-parameters of one fused Adam / AdamW step; `step` counts from 1.
struct AdamHyper {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  int64_t step = 1;
  bool decoupled_weight_decay = true;  // AdamW: p *= 1 - lr * wd; Adam: g += wd * p
};

}  // namespace wick
